import Foundation
import StoreTestSupport
import Testing

@testable import ObjectLog
@testable import ObjectLogPostgreSQL

struct Reading: Codable, Hashable {
    var label: String
    var values: [Double]
}

/// Every attribute type, required and optional, to cross the binary column forms.
final class Specimen: ManagedObject {
    @Attribute var flag = false
    @Attribute var tiny: Int8 = 0
    @Attribute var small: Int16 = 0
    @Attribute var medium: Int32 = 0
    @Attribute var large: Int64 = 0
    @Attribute var byte: UInt8 = 0
    @Attribute var word: UInt16 = 0
    @Attribute var long: UInt32 = 0
    @Attribute var huge: UInt64 = 0
    @Attribute var single: Float = 0
    @Attribute var real = 0.0
    @Attribute var text = ""
    @Attribute var when = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var bytes = Data()
    @Attribute var identifier = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Attribute var link = URL(string: "https://example.org")!
    @Attribute var reading = Reading(label: "", values: [])
    @Attribute var maybeFlag: Bool? = nil
    @Attribute var maybeTiny: Int8? = nil
    @Attribute var maybeByte: UInt8? = nil
    @Attribute var maybeHuge: UInt64? = nil
    @Attribute var maybeSingle: Float? = nil
    @Attribute var maybeText: String? = nil
    @Attribute var maybeIdentifier: UUID? = nil
    @Attribute var maybeReading: Reading? = nil
    @Attribute(.externalStorage) var scan: Data? = nil
    @Relationship var partner: Specimen?
}

@Suite(
    "Values in PostgreSQL's binary forms",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct BinaryColumnTests {
    /// Sets extreme values (or nils) on `specimen`, as `variant` chooses.
    static func fill(_ specimen: Specimen, variant: Int) {
        let high = variant.isMultiple(of: 2)
        specimen.flag = high
        specimen.tiny = high ? .max : .min
        specimen.small = high ? .max : .min
        specimen.medium = high ? .max : .min
        specimen.large = high ? .max : .min
        specimen.byte = high ? .max : 0
        specimen.word = high ? .max : 1
        specimen.long = high ? .max : 10_000
        specimen.huge = high ? .max : 100_000_000
        specimen.single = high ? .greatestFiniteMagnitude : -.leastNonzeroMagnitude
        specimen.real = high ? -0.0 : .infinity
        specimen.text = high ? "ünïcødé 🧪 \t\\ \"'" : ""
        specimen.when = Date(timeIntervalSinceReferenceDate: high ? -1e9 : 1.5e9 + 0.123456)
        specimen.bytes = Data(high ? [0, 255, 10, 13, 92] : [])
        specimen.identifier = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        specimen.link = URL(string: high ? "file:///tmp/a%20b" : "https://example.org/?q=1")!
        specimen.reading = Reading(label: high ? "peak" : "", values: high ? [1.5, -2] : [])
        specimen.maybeFlag = high ? nil : false
        specimen.maybeTiny = high ? nil : -1
        specimen.maybeByte = high ? nil : 200
        specimen.maybeHuge = high ? nil : 10_000
        specimen.maybeSingle = high ? nil : .nan
        specimen.maybeText = high ? nil : ""
        specimen.maybeIdentifier = high ? nil : UUID()
        specimen.maybeReading = high ? nil : Reading(label: "x", values: [0])
        specimen.scan = high ? nil : Data(repeating: 7, count: variant == 1 ? 20_000 : 3)
    }

    /// The values of `specimen` as text, so that two specimens compare field by field (NaN
    /// included).
    static func values(_ specimen: Specimen) -> [String] {
        [
            "\(specimen.flag)", "\(specimen.tiny)", "\(specimen.small)", "\(specimen.medium)",
            "\(specimen.large)", "\(specimen.byte)", "\(specimen.word)", "\(specimen.long)",
            "\(specimen.huge)", "\(specimen.single.bitPattern)", "\(specimen.real.bitPattern)",
            specimen.text, "\(specimen.when.timeIntervalSinceReferenceDate.bitPattern)",
            "\(Array(specimen.bytes))", specimen.identifier.uuidString,
            specimen.link.absoluteString,
            "\(specimen.reading)", "\(String(describing: specimen.maybeFlag))",
            "\(String(describing: specimen.maybeTiny))",
            "\(String(describing: specimen.maybeByte))",
            "\(String(describing: specimen.maybeHuge))",
            "\(String(describing: specimen.maybeSingle?.bitPattern))",
            "\(String(describing: specimen.maybeText))",
            "\(String(describing: specimen.maybeIdentifier))",
            "\(String(describing: specimen.maybeReading))",
            specimen.scan.map { "\($0.count) bytes, sum \($0.reduce(0) { $0 &+ Int($1) })" }
                ?? "nil",
            "\(String(describing: specimen.partner?.tiny))",
        ]
    }

    /// Rows of values in one order, whatever order they were read in.
    static func sorted(_ rows: [[String]]) -> [[String]] {
        rows.sorted { $0.lexicographicallyPrecedes($1) }
    }

    @Test(
        "every type at its extremes, and nil, comes back exactly: copied in, updated, read back"
    )
    func extremes() throws {
        let url = try TestServer.freshDatabase()
        var expected: [[String]] = []
        do {
            let container = try PersistentContainer(url: url, for: [Specimen.self])
            let context = container.newContext()
            var made: [Specimen] = []
            for variant in 0..<4 {
                let specimen = Specimen(context: context)
                Self.fill(specimen, variant: variant)
                made.append(specimen)
            }
            made[0].partner = made[1]
            try context.save()
            expected = made.map(Self.values)
            try container.close()
        }
        do {
            let container = try PersistentContainer(url: url, for: [Specimen.self])
            let context = container.newContext()
            let read = try context.fetch(
                FetchRequest<Specimen>(sortBy: [SortDescriptor(\.tiny), SortDescriptor(\.word)])
            )
            #expect(Self.sorted(read.map(Self.values)) == Self.sorted(expected))
            // An update of every object: the other way in, and the values swapped.
            for (index, specimen) in read.enumerated() { Self.fill(specimen, variant: index + 1) }
            read[3].partner = read[0]
            try context.save()
            expected = read.map(Self.values)
            try container.close()
        }
        let container = try PersistentContainer(url: url, for: [Specimen.self])
        let context = container.newContext()
        let read = try context.fetch(
            FetchRequest<Specimen>(sortBy: [SortDescriptor(\.tiny), SortDescriptor(\.word)])
        )
        #expect(Self.sorted(read.map(Self.values)) == Self.sorted(expected))
        // Rows a statement with values selects come through a result rather than through
        // COPY (which takes no values), and read the same.
        let least = Int8.min
        let filtering = container.newContext()
        let filtered = try filtering.fetch(
            FetchRequest<Specimen>(predicate: #Predicate { $0.tiny >= least })
        )
        #expect(Self.sorted(filtered.map(Self.values)) == Self.sorted(expected))
        try container.close()
    }

    @Test("many objects updated at once (copied through a table of the save's) come back exactly")
    func manyUpdates() throws {
        let url = try TestServer.freshDatabase()
        let count = PostgresStore.stagedUpdateMinimum * 2
        do {
            let container = try PersistentContainer(url: url, for: [Specimen.self])
            let context = container.newContext()
            for variant in 0..<count { Self.fill(Specimen(context: context), variant: variant) }
            try context.save()
            try container.close()
        }
        var expected: [[String]] = []
        do {
            let container = try PersistentContainer(url: url, for: [Specimen.self])
            let context = container.newContext()
            let all = try context.fetch(FetchRequest<Specimen>())
            #expect(all.count == count)
            // Every object changes; the large external data of one is kept as it was, to be
            // read back from its row by the save.
            for (index, specimen) in all.enumerated() {
                specimen.text = "updated \(index)"
                specimen.huge = UInt64.max - UInt64(index)
                specimen.maybeTiny = index.isMultiple(of: 3) ? nil : Int8(index % 100)
                specimen.partner = all[(index + 1) % all.count]
            }
            try context.save()
            expected = all.map(Self.values)
            try container.close()
        }
        let container = try PersistentContainer(url: url, for: [Specimen.self])
        let context = container.newContext()
        let read = try context.fetch(FetchRequest<Specimen>())
        #expect(Self.sorted(read.map(Self.values)) == Self.sorted(expected))
        #expect(read.contains { $0.scan?.count == 20_000 }, "the external data was kept")
        try container.close()
    }

    @Test("a string PostgreSQL cannot hold (a NUL) fails the save, and nothing is written")
    func nulRefused() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: [Specimen.self])
        let context = container.newContext()
        let kept = Specimen(context: context)
        kept.text = "kept"
        try context.save()
        for _ in 0..<3 { Specimen(context: context).text = "ok" }
        Specimen(context: context).text = "a\u{0}b"
        #expect(throws: ObjectLogError.self) { try context.save() }
        #expect(context.hasChanges, "the context keeps its changes")
        let other = container.newContext()
        #expect(try other.fetch(FetchRequest<Specimen>()).map(\.text) == ["kept"])
        try container.close()
    }

    @Test("a copy's buffer writes numbers in network order and keeps its bytes as it grows")
    func copyRowBuffer() {
        var buffer = CopyRowBuffer(capacity: 3)
        buffer.append(bigEndian: Int16(-1))
        buffer.append(bigEndian: UInt32(0x0102_0304))
        buffer.append(byte: 0xAB)
        buffer.append(contentsOf: [0x50, 0x47])
        let start: [UInt8] = [0xFF, 0xFF, 0x01, 0x02, 0x03, 0x04, 0xAB, 0x50, 0x47]
        #expect(buffer.withUnsafeBytes { Array($0) } == start)
        // Past its first growth and well past the next: every byte stays where it was written.
        var expected = start
        for index in 0..<100_000 {
            buffer.append(bigEndian: Int64(index))
            withUnsafeBytes(of: Int64(index).bigEndian) { expected += $0 }
        }
        let text = Array("0123456789".utf8)
        text.withUnsafeBytes { buffer.append(bytes: $0) }
        expected += text
        #expect(buffer.count == expected.count)
        #expect(buffer.withUnsafeBytes { Array($0) } == expected)
        buffer.removeAll()
        buffer.append(byte: 7)
        #expect(buffer.withUnsafeBytes { Array($0) } == [7])
    }

    @Test("numeric's binary form holds every UInt64 and refuses what is not one")
    func numeric() throws {
        for number: UInt64 in [0, 1, 9_999, 10_000, 10_001, 100_000_000, .max, .max - 1] {
            var field = CopyRowBuffer()
            BinaryColumn.appendNumeric(number, to: &field)
            let value = field.withUnsafeBytes { Array($0.dropFirst(4)) }
            #expect(value.withUnsafeBytes { BinaryColumn.unsignedNumeric($0) } == number)
        }
        // -1: the sign field says negative; 0.5: a digit below the units position.
        let negative: [UInt8] = [0, 1, 0, 0, 0x40, 0, 0, 0, 0, 1]
        let half: [UInt8] = [0, 1, 0xFF, 0xFF, 0, 0, 0, 1, 0x13, 0x88]
        #expect(negative.withUnsafeBytes { BinaryColumn.unsignedNumeric($0) } == nil)
        #expect(half.withUnsafeBytes { BinaryColumn.unsignedNumeric($0) } == nil)
    }
}

@Suite("A commit's list of changes")
struct CommitChangesTests {
    @Test("one entry per object in key order; an insert then updated stays an insert")
    func entries() {
        let changes: [(ObjectKey, UInt32, UInt8)] = [
            (9, 1, 0), (3, 1, 1), (9, 1, 1), (5, 2, 1), (5, 2, 2), (1, 1, 0),
        ]
        let entries = CommitChanges.entries(of: changes)
        #expect(entries.map(\.key) == [1, 3, 5, 9])
        #expect(entries.map(\.kind) == [0, 1, 2, 0])
        #expect(entries.map(\.entity) == [1, 1, 2, 1])
        let list = CommitChanges.encode(entries)
        #expect(list.count == 4 * CommitChanges.entrySize)
        var read = StoreChanges(number: 7)
        #expect(list.withUnsafeBytes { CommitChanges.read($0, into: &read) })
        #expect(read.inserted.map(\.key) == [1, 9])
        #expect(read.updated.map(\.key) == [3])
        #expect(read.deleted.map { $0.entity } == [2])
        var damaged = StoreChanges(number: 8)
        #expect(!list.dropLast().withUnsafeBytes { CommitChanges.read($0, into: &damaged) })
        #expect(CommitChanges.encode([]).isEmpty)
    }
}
