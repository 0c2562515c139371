import Testing

@testable import RDLab
