import Testing

@testable import ObjectLogTool
