import Foundation
import ObjectLog
import ObjectLogStore
import TestSupport
import Testing

/// A save writes only what changed: large external data that did not change is referred to
/// again, neither hashed nor stored anew.
@Suite("Saves of objects with large external data write only what changed")
struct ExternalDataWriteTests {
    /// A container whose external data goes to blobs from `threshold` bytes.
    func container(
        _ directory: TemporaryDirectory,
        threshold: Int? = nil
    ) throws -> PersistentContainer {
        var options = StoreOptions()
        if let threshold { options.externalStorageMinimumByteCount = threshold }
        return try PersistentContainer(
            path: directory.file("lab.objectlog"),
            for: testEntities,
            options: options
        )
    }

    func fileSize(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
    }

    @Test("renaming an object whose thumbnail was read, or not, writes no blob and no data")
    func unchangedDataIsNotWrittenAgain() throws {
        let directory = TemporaryDirectory()
        let container = try container(directory)
        let store = container.coordinator.logStore!
        let picture = Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        do {
            let context = container.newContext()
            let configuration = Configuration(context: context)
            configuration.name = "spots"
            configuration.thumbnail = picture
            try context.save()
        }
        #expect(store.statistics.blobsWritten == 1)
        let offered = store.statistics.blobsOffered
        let path = directory.file("lab.objectlog")
        let sizeBefore = try fileSize(path)
        // In one context the thumbnail is read before each rename; in another it is never read.
        let reading = container.newContext()
        let reader = try #require(try reading.fetch(Configuration.self).first)
        let unread = container.newContext()
        for round in 0..<10 {
            #expect(reader.thumbnail == picture)
            reader.name = "spots \(round)"
            try reading.save()
        }
        for round in 0..<10 {
            unread.reset()
            let other = try #require(try unread.fetch(Configuration.self).first)
            other.notes = "round \(round)"
            try unread.save()
        }
        // Twenty saves: no blob was hashed again, and each save wrote a small record.
        #expect(store.statistics.blobsOffered == offered)
        #expect(store.statistics.blobsWritten == 1)
        let grown = try fileSize(path) - sizeBefore
        #expect(grown < 20 * 1_000, "twenty small saves grew the file by \(grown) bytes")
        // The data reads back whole, in a fresh context.
        let check = container.newContext()
        #expect(try check.fetch(Configuration.self).first?.thumbnail == picture)
        try container.close()
    }

    @Test("changed data is stored as a new blob; data set back to what it was reuses its blob")
    func changedDataIsWritten() throws {
        let directory = TemporaryDirectory()
        let container = try container(directory)
        let store = container.coordinator.logStore!
        let first = Data(repeating: 1, count: 20_000)
        let second = Data(repeating: 2, count: 20_000)
        let context = container.newContext()
        let configuration = Configuration(context: context)
        configuration.name = "waves"
        configuration.thumbnail = first
        try context.save()
        configuration.thumbnail = second
        try context.save()
        #expect(store.statistics.blobsWritten == 2)
        configuration.thumbnail = first
        try context.save()
        // Offered (hashed) again, since it changed, but the blob file already exists.
        #expect(store.statistics.blobsOffered == 3)
        #expect(store.statistics.blobsWritten == 2)
        let check = container.newContext()
        #expect(try check.fetch(Configuration.self).first?.thumbnail == first)
        try container.close()
    }

    @Test("the store's threshold decides which data goes to a blob")
    func threshold() throws {
        let small = Data(repeating: 7, count: 2_000)
        for (threshold, blobs) in [(nil, 0), (1_024, 1)] as [(Int?, UInt64)] {
            let directory = TemporaryDirectory()
            let container = try container(directory, threshold: threshold)
            let context = container.newContext()
            let configuration = Configuration(context: context)
            configuration.name = "bz"
            configuration.thumbnail = small
            try context.save()
            #expect(
                container.coordinator.logStore!.statistics.blobsWritten == blobs,
                "threshold \(threshold.map(String.init) ?? "default")"
            )
            let check = container.newContext()
            #expect(try check.fetch(Configuration.self).first?.thumbnail == small)
            try container.close()
        }
    }
}
