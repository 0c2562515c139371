import Foundation
import ObjectLogStore

func runStoreBenchmarks(arguments: [String]) {
    do {
        try probe(arguments: arguments)
    } catch {
        print("error: \(error)")
    }
}

private func probe(arguments: [String]) throws {
    if arguments.first == "--probe-open" {
        let count = Int(arguments.dropFirst().first ?? "1000000") ?? 1_000_000
        let path = "/tmp/probe/p.olog"
        if !FileManager.default.fileExists(atPath: path) {
            let store = try LogStore.open(path: path)
            var transaction = Transaction()
            let keys = store.allocateKeys(count)
            for key in keys {
                transaction.put(
                    key: key,
                    entity: 1,
                    payload: [UInt8](repeating: UInt8(key & 0xFF), count: 50),
                    isInsert: true
                )
            }
            let t = try measure { try store.commit(transaction) }
            print("commit \(count): \(t)s")
            try store.close()
        }
        for usesIndex in [true, false] {
            var options = StoreOptions()
            options.readOnly = true
            options.usesIndex = usesIndex
            var store: LogStore?
            let t = try measure { store = try LogStore.open(path: path, options: options) }
            print(
                "open usesIndex=\(usesIndex): \(t * 1000) ms, \(store!.indexState), count \(store!.liveCount(entity: nil)), \(Double(store!.fileBytes) / t / 1e9) GB/s"
            )
        }
    }
}
