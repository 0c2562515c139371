import ObjectLog

/// The attribute types each type widens to in a lightweight migration, as the randomized
/// migration tests of every store draw them: written out here, not taken from the engine, so
/// that the tests check the engine's rule rather than repeat it.
public let lightweightWidenings: [AttributeType: [AttributeType]] = [
    .int8: [.int16, .int32, .int64], .int16: [.int32, .int64], .int32: [.int64],
    .uint8: [.uint16, .uint32, .uint64, .int16, .int32, .int64],
    .uint16: [.uint32, .uint64, .int32, .int64], .uint32: [.uint64, .int64],
    .float: [.double],
]
