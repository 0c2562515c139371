import Testing

@testable import ObjectLogStore
