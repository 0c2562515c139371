import Testing

@testable import ObjectLog
