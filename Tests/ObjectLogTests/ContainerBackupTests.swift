import Foundation
import ObjectLog
import TestSupport
import Testing

@Suite("Container backup")
struct ContainerBackupTests {
    final class Sample: ManagedObject {
        @Attribute(.unique) var name = ""
        @Attribute(.externalStorage) var scan = Data()
    }

    @Test("a backup opens with the same model and holds every object with its external data")
    func backupOpens() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(
            path: directory.file("lab.olog"),
            for: [Sample.self]
        )
        let context = container.newContext()
        for index in 0..<8 {
            let sample = Sample(context: context)
            sample.name = "sample \(index)"
            sample.scan = Data(repeating: UInt8(index), count: 50_000)
        }
        // Metadata is written with the next save; a backup copies what is saved.
        try container.setMetadata(.string("dark"), forKey: "theme")
        try context.save()
        let result = try container.backup(to: directory.file("copy.olog"))
        #expect(result.objects == 8)
        #expect(result.externalFiles == 8)
        #expect(result.externalBytes == 8 * 50_000)
        // The container keeps saving after the backup; the copy stays as it was.
        Sample(context: context).name = "later"
        try context.save()

        let copy = try PersistentContainer(path: directory.file("copy.olog"), for: [Sample.self])
        let samples = try copy.newContext().fetch(
            FetchRequest<Sample>(sortBy: [SortDescriptor(\.name)])
        )
        #expect(samples.map(\.name) == (0..<8).map { "sample \($0)" })
        #expect(samples.map(\.scan) == (0..<8).map { Data(repeating: UInt8($0), count: 50_000) })
        #expect(copy.metadata["theme"] == .string("dark"))

        let again = #expect(throws: ObjectLogError.self) {
            try container.backup(to: directory.file("copy.olog"))
        }
        #expect(again?.code == .store)
        #expect(again?.storeError?.code == .invalidArgument)
    }
}
