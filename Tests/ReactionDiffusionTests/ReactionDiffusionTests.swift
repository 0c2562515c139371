import Testing

@testable import ReactionDiffusion
