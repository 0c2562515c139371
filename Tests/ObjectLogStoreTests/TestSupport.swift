import Foundation

@testable import ObjectLogStore

/// The live state of a store as a plain dictionary: key → (entity, payload).
func snapshot(_ store: LogStore) throws -> [ObjectKey: [UInt8]] {
    var result: [ObjectKey: [UInt8]] = [:]
    for key in store.liveKeys(entity: nil) {
        result[key] = try store.readObject(key)!.payload
    }
    return result
}

func readBytes(_ path: String) -> [UInt8] {
    [UInt8](FileManager.default.contents(atPath: path) ?? Data())
}

func writeBytes(_ bytes: [UInt8], to path: String) {
    _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
}

/// Inserts one object of entity 1 whose payload is `byte`, in a transaction of its own.
@discardableResult
func insert(_ store: LogStore, _ byte: UInt8) throws -> ObjectKey {
    var transaction = Transaction()
    let key = store.allocateKeys(1).lowerBound
    transaction.put(key: key, entity: 1, payload: [byte], isInsert: true)
    try store.commit(transaction)
    return key
}
