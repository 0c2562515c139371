import Foundation
import ObjectLogStore
import Synchronization
import TestSupport
import Testing

@testable import ObjectLog

/// A three-level entity hierarchy with options at every level (each class is an entity too).
class Plant: ManagedObject {
    @Attribute(.unique) var code = ""
    @Attribute var height = 0.0
    @Attribute(.transient) var cache = 0
    @Attribute(.externalStorage) var photo: Data? = nil
}

class Fern: Plant {
    @Attribute var fronds = 0
    @Attribute(.transient) var scratch = ""
    @Attribute(.unique) var label = ""
}

final class TreeFern: Fern {
    @Attribute(.externalStorage) var scan = Data()
    @Attribute var trunk = RenderSettings()
    @Attribute(.unique) var serial: Int32 = 0
}

/// An entity whose initialisation creates another entity's object, so its prototype
/// initialises more attributes than it declares.
final class Greedy: ManagedObject {
    @Attribute(.unique) var name = ""
    let extra = Tag()
}

@Suite("Attribute options discovery")
struct AttributeDiscoveryTests {
    /// The names, uniqueness and external storage of an entity's attributes.
    private func attributes(
        of type: ManagedObject.Type,
        in model: ManagedObjectModel
    ) throws -> [String] {
        let entity = try #require(model.entity(for: type))
        return entity.schema.properties.map { property in
            property.name + (property.isUnique ? " unique" : "")
                + (property.isExternal ? " external" : "")
        }
    }

    @Test("options of attributes declared in base classes and subclasses are discovered")
    func hierarchy() throws {
        let model = try ManagedObjectModel([Plant.self, Fern.self, TreeFern.self])
        #expect(
            try attributes(of: Plant.self, in: model) == [
                "code unique", "height", "photo external",
            ]
        )
        #expect(
            try attributes(of: Fern.self, in: model) == [
                "code unique", "height", "photo external", "fronds", "label unique",
            ]
        )
        #expect(
            try attributes(of: TreeFern.self, in: model) == [
                "code unique", "height", "photo external", "fronds", "label unique",
                "scan external", "trunk", "serial unique",
            ]
        )
        let treeFern = try #require(model.entity(for: TreeFern.self))
        #expect(treeFern.schema.uniquenessConstraints == [["code"], ["label"], ["serial"]])
        #expect(treeFern.schema.property(named: "trunk")?.type == .codable)
        #expect(treeFern.hasExternalData)
    }

    @Test("a subclass entity stores, lazily loads and enforces its inherited options")
    func hierarchyRoundTrip() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("ferns.objectlog")
        let scan = Data((0..<ExternalStorage.minimumByteCount).map { UInt8($0 & 0x7F) })
        do {
            let container = try PersistentContainer(path: path, for: [TreeFern.self])
            let context = container.newContext()
            let fern = TreeFern(context: context)
            fern.code = "T1"
            fern.label = "tall"
            fern.serial = 7
            fern.scan = scan
            fern.cache = 99
            try context.save()
            let twin = TreeFern(context: context)
            twin.code = "T1"
            twin.serial = 8
            #expect(throws: ObjectLogError.self) { try context.save() }
            try container.close()
        }
        let container = try PersistentContainer(path: path, for: [TreeFern.self])
        let context = container.newContext()
        let ferns = try context.fetch(TreeFern.self)
        let fern = try #require(ferns.first)
        #expect(ferns.count == 1)
        #expect(fern.code == "T1" && fern.label == "tall" && fern.serial == 7)
        #expect(fern.cache == 0, "a transient attribute is not stored")
        #expect(context.externalReferences.count == 1, "the scan is not read yet")
        #expect(fern.scan == scan)
        // Read now: the reference keeps the data, for saves to write it back unchanged.
        #expect(context.externalReferences.values.first?.data == scan)
        #expect(try container.coordinator.logStore!.blobFiles().count == 1)
    }

    @Test("objects created on other threads while models are built do not disturb discovery")
    func concurrentCreation() throws {
        let types: [ManagedObject.Type] = [TreeFern.self, Configuration.self]
        let expected = Self.describe(try ManagedObjectModel(types))
        #expect(expected.contains("TreeFern.serial unique"))
        let gate = Gate()
        let creators = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: creators) {
                while !gate.done.load(ordering: .relaxed) {
                    let fern = TreeFern()
                    fern.code = "x"
                    _ = Configuration()
                    gate.created.add(1, ordering: .relaxed)
                }
            }
        }
        while gate.created.load(ordering: .relaxed) == 0 { Thread.sleep(forTimeInterval: 0.001) }
        let built = LockedValue<[[String]]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<40 {
                let description = (try? ManagedObjectModel(types)).map(Self.describe) ?? []
                built.withLock { $0.append(description) }
            }
        }
        let createdWhileBuilding = gate.created.load(ordering: .relaxed)
        gate.done.store(true, ordering: .relaxed)
        creators.wait()
        let results = built.withLock { $0 }
        #expect(results.count == 80)
        #expect(results.allSatisfy { $0 == expected })
        #expect(createdWhileBuilding > 1, "objects were created while the models were built")
    }

    @Test("a prototype that initialises attributes it does not declare is a model error")
    func foreignAttributes() {
        #expect {
            _ = try ManagedObjectModel([Greedy.self])
        } throws: { error in
            let error = error as? ObjectLogError
            return error?.code == .invalidModel
                && error?.message.contains("attribute options of 'Greedy'") == true
        }
    }

    @Test("an attribute wrapper is exactly as large as its value")
    func wrapperSize() {
        #expect(MemoryLayout<Attribute<Int>>.size == MemoryLayout<Int>.size)
        #expect(MemoryLayout<Attribute<Int>>.stride == MemoryLayout<Int>.stride)
        #expect(MemoryLayout<Attribute<String>>.size == MemoryLayout<String>.size)
        #expect(MemoryLayout<Attribute<Double>>.size == MemoryLayout<Double>.size)
        #expect(MemoryLayout<Attribute<Date>>.size == MemoryLayout<Date>.size)
        #expect(MemoryLayout<Attribute<Data?>>.size == MemoryLayout<Data?>.size)
        #expect(MemoryLayout<Attribute<Bool>>.size == MemoryLayout<Bool>.size)
    }

    /// Every entity's attributes with their uniqueness and external storage, in model order.
    private static func describe(_ model: ManagedObjectModel) -> [String] {
        model.entities.flatMap { entity in
            entity.schema.properties.map { property in
                "\(entity.name).\(property.name)" + (property.isUnique ? " unique" : "")
                    + (property.isExternal ? " external" : "")
            }
        }
    }
}

/// Shared state of the creator threads of ``AttributeDiscoveryTests/concurrentCreation()``.
private final class Gate: Sendable {
    let done = Atomic<Bool>(false)
    let created = Atomic<Int>(0)
}
