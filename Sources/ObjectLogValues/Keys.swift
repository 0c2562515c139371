/// Object identity in a store: a store-wide unique, never-reused, non-zero 64-bit key.
public typealias ObjectKey = UInt64

/// The engine's number for an entity, carried in every object's record.
public typealias EntityTag = UInt32
