import Foundation
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

/// A hierarchy as Core Data users draw it, the article's (InheritanceArticleTests.swift).
///
/// An abstract root, a concrete parent with a subentity and a uniqueness constraint of its
/// own, and a relationship whose destination is the root: the article shows the model these
/// tests check.
typealias Drawing = InheritanceArticle

extension InheritanceArticle {
    /// The classes `openDrawing(at:)` lists; their superclasses join the model by themselves.
    static let entities: [ManagedObject.Type] = [Circle.self, Square.self, Canvas.self]
}

/// Entities the model must refuse.
enum BadHierarchies {
    /// Abstract with nothing below it in the model.
    class Lonely: ManagedObject {
        @Attribute var name = ""
        override class var isAbstract: Bool { true }
    }

    final class InheritsAbstract: Lonely {
        @Attribute var extra = 0
    }

    class Named: ManagedObject {
        @Attribute var name = ""
        override class var entityName: String { "Named" }
    }

    final class SameName: Named {}
}

@Suite("Entity inheritance")
struct EntityInheritanceTests {
    typealias Shape = Drawing.Shape
    typealias Circle = Drawing.Circle
    typealias Polygon = Drawing.Polygon
    typealias Square = Drawing.Square
    typealias Canvas = Drawing.Canvas

    private func open(_ store: TestStore) throws -> PersistentContainer {
        try store.open(for: Drawing.entities)
    }

    /// One canvas holding a circle, a polygon and a square, saved.
    private func populate(_ context: ManagedObjectContext) throws {
        let canvas = Canvas(context: context)
        canvas.title = "board"
        for (index, name) in ["c1", "c2"].enumerated() {
            let circle = Circle(context: context)
            circle.name = name
            circle.radius = Double(index + 1)
            circle.area = Double.pi * circle.radius * circle.radius
            circle.canvas = canvas
        }
        let triangle = Polygon(context: context)
        triangle.name = "tri"
        triangle.sides = 3
        triangle.code = "P3"
        triangle.area = 4
        triangle.canvas = canvas
        let square = Square(context: context)
        square.name = "sq"
        square.sides = 4
        square.side = 2
        square.code = "P4"
        square.area = 4
        square.canvas = canvas
        try context.save()
    }

    @Test("the model links superentities, shares inherited properties and adds unlisted parents")
    func model() throws {
        let model = try ManagedObjectModel(Drawing.entities)
        let shape = try #require(model.entity(for: Shape.self), "the root is added unlisted")
        let polygon = try #require(model.entity(for: Polygon.self))
        let square = try #require(model.entity(for: Square.self))
        let circle = try #require(model.entity(for: Circle.self))
        #expect(shape.isAbstract && !polygon.isAbstract && !square.isAbstract)
        #expect(square.superentity === polygon && polygon.superentity === shape)
        #expect(shape.superentity == nil)
        #expect(shape.subentities.map(\.name).sorted() == ["Circle", "Polygon"])
        #expect(square.isKind(of: shape) && !circle.isKind(of: polygon))
        #expect(shape.concreteEntities.map(\.name).sorted() == ["Circle", "Polygon", "Square"])
        // Inherited properties come first, as the same accessors.
        #expect(
            square.accessors.map(\.name) == ["name", "area", "canvas", "sides", "code", "side"]
        )
        for (index, accessor) in shape.accessors.enumerated() {
            #expect(square.accessors[index] === accessor)
            #expect(circle.accessors[index] === accessor)
        }
        #expect(square.schema.superentity == "Polygon")
        #expect(shape.schema.isAbstract && !square.schema.isAbstract)
        #expect(model.schema.superentities(of: "Square") == ["Polygon", "Shape"])
        #expect(model.schema.family(of: "Polygon").map(\.name).sorted() == ["Polygon", "Square"])
        // `name` is unique across the whole hierarchy; `code` below Polygon.
        let nameIndex = try #require(square.uniquenessConstraints.firstIndex(of: [0]))
        let codeIndex = try #require(square.uniquenessConstraints.firstIndex(of: [4]))
        #expect(square.uniquenessScopes[nameIndex] == shape.tag)
        #expect(square.uniquenessScopes[codeIndex] == polygon.tag)
        // The inverse of the inherited relationship is the root's.
        let shapes = try #require(model.entity(for: Canvas.self)?.relationshipAccessors.first)
        #expect(shapes.inverse === shape.relationshipAccessors.first)
    }

    @Test("an entity outside any hierarchy is described and hashed as before hierarchies")
    func plainSchemaUnchanged() throws {
        let model = try ManagedObjectModel([Tag.self])
        let json = String(decoding: model.schema.canonicalJSON(), as: UTF8.self)
        #expect(!json.contains("superentity") && !json.contains("isAbstract"))
        let decoded = try ModelSchema.decode(json: model.schema.canonicalJSON())
        #expect(decoded == model.schema)
        let drawing = try ManagedObjectModel(Drawing.entities)
        let again = try ModelSchema.decode(json: drawing.schema.canonicalJSON())
        #expect(again == drawing.schema, "superentity and isAbstract survive the JSON")
    }

    @Test("the model refuses abstract entities that could never hold an object")
    func refusals() throws {
        let lonely = #expect(throws: ObjectLogError.self) {
            _ = try ManagedObjectModel([BadHierarchies.Lonely.self])
        }
        #expect(lonely?.code == .invalidModel)
        #expect(lonely?.message.contains("list its subclasses") == true)
        let inherited = #expect(throws: ObjectLogError.self) {
            _ = try ManagedObjectModel([BadHierarchies.InheritsAbstract.self])
        }
        #expect(inherited?.message.contains("inherits isAbstract from 'Lonely'") == true)
        let named = #expect(throws: ObjectLogError.self) {
            _ = try ManagedObjectModel([BadHierarchies.SameName.self])
        }
        #expect(named?.message.contains("override it in the subclass too") == true)
    }

    @Test("inserting an instance of an abstract entity fails with abstractEntity")
    func abstractInsert() throws {
        let container = try open(TestStore(.memory))
        let context = container.newContext()
        let error = #expect(throws: ObjectLogError.self) { try context.insert(Shape()) }
        #expect(error?.code == .abstractEntity)
        #expect(error?.message.contains("Circle, Polygon, Square") == true)
        // The initializer cannot throw: the next save does, and saves nothing.
        _ = Shape(context: context)
        let circle = Circle(context: context)
        circle.name = "kept out"
        let saved = #expect(throws: ObjectLogError.self) { try context.save() }
        #expect(saved?.code == .abstractEntity)
        #expect(try container.newContext().count(FetchRequest<Circle>()) == 0)
    }

    @Test(
        "a fetch of a parent returns its subentities' objects, saved and pending",
        arguments: TestStoreKind.available
    )
    func fetchIncludesSubentities(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try open(store)
        let context = container.newContext()
        try populate(context)
        let reader = container.newContext()
        let shapes = try reader.fetch(FetchRequest<Shape>())
        #expect(shapes.count == 4)
        #expect(
            Set(shapes.map { String(describing: type(of: $0)) }) == ["Circle", "Polygon", "Square"]
        )
        #expect(shapes.map(\.key) == shapes.map(\.key).sorted(), "unsorted results in key order")
        #expect(try reader.count(FetchRequest<Shape>()) == 4)
        #expect(try reader.count(FetchRequest<Polygon>()) == 2)
        var own = FetchRequest<Polygon>()
        own.includesSubentities = false
        #expect(try reader.fetch(own).map(\.name) == ["tri"])
        #expect(try reader.count(own) == 1)
        var none = FetchRequest<Shape>()
        none.includesSubentities = false
        #expect(try reader.fetch(none).isEmpty, "an abstract entity has no objects of its own")
        // Pending inserts and deletes count too.
        let pending = Square(context: reader)
        pending.name = "new"
        reader.delete(try #require(shapes.first { $0.name == "c1" }))
        #expect(
            Set(try reader.fetch(FetchRequest<Shape>()).map(\.name)) == ["c2", "tri", "sq", "new"]
        )
        #expect(try reader.count(FetchRequest<Shape>()) == 4)
        #expect(try reader.fetchIdentifiers(FetchRequest<Polygon>()).count == 3)
    }

    @Test(
        "predicates and sorts on inherited properties order the objects of every entity",
        arguments: TestStoreKind.available
    )
    func predicatesAndSorts(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try open(store)
        try populate(container.newContext())
        let context = container.newContext()
        let byArea = FetchRequest<Shape>(
            predicate: #Predicate { $0.area > 3.5 },
            sortBy: [SortDescriptor(\.area, order: .reverse), SortDescriptor(\.name)]
        )
        // c2: 4π, sq: 4, tri: 4 (c1 is π).
        #expect(try context.fetch(byArea).map(\.name) == ["c2", "sq", "tri"])
        #expect(try context.count(byArea) == 3)
        var window = byArea
        window.fetchOffset = 1
        window.fetchLimit = 1
        #expect(try context.fetch(window).map(\.name) == ["sq"])
        #expect(try context.count(window) == 1)
        #expect(try context.fetchIdentifiers(window).map(\.entityName) == ["Square"])
        var lexical = FetchRequest<Shape>(sortBy: [SortDescriptor(\.name, comparator: .lexical)])
        lexical.fetchLimit = 2
        #expect(try context.fetch(lexical).map(\.name) == ["c1", "c2"])
        let text = FetchRequest<Shape>(textMatch: .contains(\.name, "Q", options: .caseInsensitive))
        #expect(try context.fetch(text).map(\.name) == ["sq"])
        #expect(try context.count(text) == 1)
        // The same search in a predicate (by character, so in the stored case), and a prefix.
        let contains = FetchRequest<Shape>(predicate: #Predicate { $0.name.contains("q") })
        #expect(try context.fetch(contains).map(\.name) == ["sq"])
        #expect(try context.count(contains) == 1)
        let prefix = FetchRequest<Shape>(
            predicate: #Predicate { $0.name.starts(with: "c") },
            sortBy: [SortDescriptor(\.name, comparator: .lexical)]
        )
        #expect(try context.fetch(prefix).map(\.name) == ["c1", "c2"])
    }

    @Test(
        "a relationship to a parent holds any subentity, across a reopen and a cascade",
        arguments: TestStoreKind.persistent
    )
    func polymorphicRelationships(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        do {
            let container = try open(store)
            try populate(container.newContext())
            try container.close()
        }
        let container = try open(store)
        let context = container.newContext()
        let canvas = try #require(try context.fetch(FetchRequest<Canvas>()).first)
        let kinds = canvas.shapes.map { "\(type(of: $0)):\($0.name)" }.sorted()
        #expect(kinds == ["Circle:c1", "Circle:c2", "Polygon:tri", "Square:sq"])
        let square = try #require(canvas.shapes.first { $0 is Square } as? Square)
        #expect(square.side == 2 && square.canvas === canvas, "the inverse is kept")
        #expect(try context.object(with: square.objectID, as: Shape.self) === square)
        #expect(try context.existingObject(with: square.objectID, as: Polygon.self) === square)
        // Moving a subentity's object to another canvas updates the inverse on both sides.
        let other = Canvas(context: context)
        square.canvas = other
        #expect(other.shapes.map(\.name) == ["sq"] && canvas.shapes.count == 3)
        try context.save()
        context.delete(canvas)
        try context.save()
        let after = container.newContext()
        #expect(try after.fetch(FetchRequest<Shape>()).map(\.name) == ["sq"], "cascade")
    }

    @Test(
        "a uniqueness constraint of a parent holds across its subentities",
        arguments: TestStoreKind.persistent
    )
    func uniquenessAcrossHierarchy(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try open(store)
        let context = container.newContext()
        try populate(context)
        // A square named like a saved circle.
        let clash = Square(context: context)
        clash.name = "c1"
        clash.code = "P9"
        let error = #expect(throws: ObjectLogError.self) { try context.save() }
        #expect(error?.code == .uniqueness)
        #expect(error?.message.contains("uniqueness constraint of 'Shape' on 'name'") == true)
        #expect(error?.message.contains("Circle#") == true, "\(error?.message ?? "")")
        context.rollback()
        // Two objects of two entities in one save.
        let first = Circle(context: context)
        first.name = "twin"
        let second = Polygon(context: context)
        second.name = "twin"
        #expect(throws: ObjectLogError.self) { try context.save() }
        context.rollback()
        // `code` is Polygon's: circles do not have it, squares share it.
        let square = Square(context: context)
        square.name = "sq2"
        square.code = "P3"
        let polygonError = #expect(throws: ObjectLogError.self) { try context.save() }
        #expect(polygonError?.message.contains("'Polygon' on 'code'") == true)
        square.code = "P5"
        try context.save()
        // Freed by a delete, a name can be taken by another entity.
        let circle = try #require(
            try context.fetch(FetchRequest<Circle>()).first { $0.name == "c1" }
        )
        context.delete(circle)
        let heir = Polygon(context: context)
        heir.name = "c1"
        heir.code = "P6"
        try context.save()
        // A fresh coordinator builds the index from the store, across the hierarchy.
        try container.close()
        let reopened = try open(store)
        let fresh = reopened.newContext()
        let late = Circle(context: fresh)
        late.name = "sq2"
        #expect(throws: ObjectLogError.self) { try fresh.save() }
    }

    @Test("adding a parent above entities, reordering their properties, is lightweight")
    func migration() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("evolve.olog")
        try writeStore(at: path, for: [HierarchyV1.Item.self, HierarchyV1.Special.self]) {
            context in
            let special = HierarchyV1.Special(context: context)
            special.name = "old special"
            special.level = 5
            for index in 0..<3 {
                let item = HierarchyV1.Item(context: context)
                item.name = "item \(index)"
                item.size = index
            }
        }
        do {
            // Item and Special move under a new abstract Base, which declares `name`.
            let container = try PersistentContainer(path: path, for: HierarchyV2.entities)
            let context = container.newContext()
            let special = HierarchyV2.Special(context: context)
            special.name = "special"
            special.level = 9
            try context.save()
            let all = try context.fetch(
                FetchRequest<HierarchyV2.Base>(sortBy: [
                    SortDescriptor(\.name, comparator: .lexical)
                ])
            )
            #expect(all.map(\.name) == ["item 0", "item 1", "item 2", "old special", "special"])
            let specials = try context.fetch(
                FetchRequest<HierarchyV2.Special>(sortBy: [SortDescriptor(\.level)])
            )
            #expect(specials.map(\.name) == ["old special", "special"])
            #expect(specials.map(\.level) == [5, 9])
            let items = try context.fetch(FetchRequest<HierarchyV2.Item>())
            #expect(items.map(\.size) == [0, 1, 2])
            // `name` is now unique across Base's hierarchy (checked when the store migrated).
            let clash = HierarchyV2.Special(context: context)
            clash.name = "item 1"
            #expect(throws: ObjectLogError.self) { try context.save() }
            try container.close()
        }
        let history = try #require(
            try ModelHistory.read(from: LogStore.open(path: path, options: .readOnlyExisting))
        )
        #expect(history.versions.count == 2)
        #expect(history.current?.schema.entity(named: "Item")?.superentity == "Base")
    }

    @Test("a migration that makes a uniqueness constraint span a hierarchy checks it across")
    func migrationConstraintAcrossHierarchy() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("dupes.olog")
        do {
            // Two unrelated entities, each with an object named "same".
            let container = try PersistentContainer(
                path: path,
                for: [HierarchyV1.Item.self, HierarchyV1.Special.self]
            )
            let context = container.newContext()
            HierarchyV1.Item(context: context).name = "same"
            HierarchyV1.Special(context: context).name = "same"
            try context.save()
            try container.close()
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        // Under Base, `name` is unique across both.
        let error = #expect(throws: ObjectLogError.self) {
            _ = try PersistentContainer(path: path, for: HierarchyV2.entities)
        }
        #expect(error?.code == .uniqueness)
        #expect(error?.message.contains("constraint of 'Base' on 'name' does not hold") == true)
        #expect(
            error?.message.contains("Item#") == true && error?.message.contains("Special#") == true
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "nothing written")
    }

    @Test("a version that makes an entity with objects abstract is refused, nothing written")
    func newlyAbstractRefused() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("abstract.olog")
        try writeStore(at: path, for: HierarchyV3.concrete) { context in
            let base = HierarchyV3.Base(context: context)
            base.name = "plain base"
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = #expect(throws: ObjectLogError.self) {
            _ = try PersistentContainer(path: path, for: HierarchyV2.entities)
        }
        #expect(error?.code == .modelMismatch)
        #expect(error?.message.contains("entity 'Base' became abstract") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    /// A ledger of 30 saved entries, `r0` to `r29` with amounts 0 to 29, whose index modulo 3
    /// makes it an `Entry` (0), a `Credit` (1) or a `Debit` (2); and the context that saved them.
    private func openLedger(
        _ directory: TemporaryDirectory
    ) throws -> (PersistentContainer, ManagedObjectContext) {
        let container = try PersistentContainer(
            path: directory.file("ledger.olog"),
            for: InheritedLedger.entities
        )
        let context = container.newContext()
        for index in 0..<30 {
            let entry: InheritedLedger.Entry =
                switch index % 3 {
                case 0: InheritedLedger.Entry(context: context)
                case 1: InheritedLedger.Credit(context: context)
                default: InheritedLedger.Debit(context: context)
                }
            entry.reference = "r\(index)"
            entry.amount = Double(index)
        }
        try context.save()
        return (container, context)
    }

    @Test(
        "batch deletes reach the subentities' objects in one transaction, through a context when there are relationships"
    )
    func batchDelete() throws {
        let directory = TemporaryDirectory()
        let (container, context) = try openLedger(directory)
        let before = container.coordinator.logStore!.transactionCount
        let deleted = try context.execute(
            BatchDeleteRequest<InheritedLedger.Entry>(predicate: #Predicate { $0.amount < 12 })
        )
        #expect(container.coordinator.logStore!.transactionCount == before + 1)
        #expect(deleted.deleted.count == 12)
        #expect(Set(deleted.deleted.map(\.entityName)) == ["Entry", "Credit", "Debit"])
        let reader = container.newContext()
        #expect(try reader.count(FetchRequest<InheritedLedger.Entry>()) == 18)
        #expect(try reader.count(FetchRequest<InheritedLedger.Credit>()) == 6)
        // Without subentities: only entries of Entry itself.
        var own = BatchDeleteRequest<InheritedLedger.Entry>(
            predicate: #Predicate { $0.amount < 20 }
        )
        own.includesSubentities = false
        let plain = try context.execute(own)
        #expect(plain.deleted.map(\.entityName) == ["Entry", "Entry", "Entry"])
        #expect(try reader.count(FetchRequest<InheritedLedger.Entry>()) == 15)
        // A freed unique value can be taken by another entity of the hierarchy.
        let heir = InheritedLedger.Debit(context: context)
        heir.reference = "r0"
        try context.save()

        // With relationships, the delete runs through a context: the cascade and inverse hold.
        let drawingStore = try TestStore(.logFile)
        let drawing = try open(drawingStore)
        try populate(drawing.newContext())
        let shapes = drawing.newContext()
        let removed = try shapes.execute(
            BatchDeleteRequest<Shape>(predicate: #Predicate { $0.area < 4.5 })
        )
        #expect(Set(removed.deleted.map(\.entityName)) == ["Circle", "Polygon", "Square"])
        let check = drawing.newContext()
        let canvas = try #require(try check.fetch(FetchRequest<Canvas>()).first)
        let left = try check.fetch(FetchRequest<Shape>())
        #expect(left.map(\.name) == ["c2"])
        #expect(left.first?.canvas?.title == "board")
        #expect(canvas.shapes.map(\.name) == ["c2"])
    }

    @Test("batch updates of a parent change its subentities' objects in one transaction")
    func batchUpdate() throws {
        let directory = TemporaryDirectory()
        let (container, context) = try openLedger(directory)
        let before = container.coordinator.logStore!.transactionCount
        let updated = try context.execute(
            BatchUpdateRequest<InheritedLedger.Entry>(
                predicate: #Predicate { $0.amount >= 15 },
                updates: [.set(\.isCleared, to: true)]
            )
        )
        #expect(container.coordinator.logStore!.transactionCount == before + 1)
        #expect(updated.updated.count == 15)
        #expect(Set(updated.updated.map(\.entityName)) == ["Entry", "Credit", "Debit"])
        let reader = container.newContext()
        let cleared = try reader.fetch(
            FetchRequest<InheritedLedger.Entry>(predicate: #Predicate { $0.isCleared })
        )
        #expect(cleared.map(\.amount).sorted() == (15..<30).map(Double.init))
        // Each object keeps its own attributes.
        let debits = try reader.fetch(FetchRequest<InheritedLedger.Debit>())
        #expect(debits.allSatisfy { $0.reason == "unknown" } && debits.count == 10)
        // Only the parent's own objects.
        var own = BatchUpdateRequest<InheritedLedger.Entry>(updates: [.set(\.amount, to: -1)])
        own.includesSubentities = false
        #expect(try context.execute(own).updated.count == 10)
        let negative = FetchRequest<InheritedLedger.Entry>(predicate: #Predicate { $0.amount < 0 })
        #expect(try container.newContext().count(negative) == 10)
        // A unique value set on objects of two entities fails, and writes nothing.
        let pair = #Predicate<InheritedLedger.Entry> { $0.amount > 0.5 && $0.amount < 2.5 }
        let same = BatchUpdateRequest<InheritedLedger.Entry>(
            predicate: pair,
            updates: [.set(\.reference, to: "same")]
        )
        let clash = #expect(throws: ObjectLogError.self) { try context.execute(same) }
        #expect(clash?.code == .uniqueness)
        let message = clash?.message ?? ""
        #expect(message.contains("Credit#") && message.contains("Debit#"), "\(message)")
        let named = FetchRequest<InheritedLedger.Entry>(
            predicate: #Predicate { $0.reference == "same" }
        )
        #expect(try container.newContext().count(named) == 0)
    }

    @Test("a batch insert of an abstract entity fails with abstractEntity and writes nothing")
    func batchInsertAbstract() throws {
        let store = try TestStore(.logFile)
        let container = try open(store)
        let context = container.newContext()
        let error = #expect(throws: ObjectLogError.self) {
            try context.execute(
                BatchInsertRequest<Shape>(count: 3) { index, shape in
                    shape.name = "s\(index)"
                }
            )
        }
        #expect(error?.code == .abstractEntity)
        let inserted = try context.execute(
            BatchInsertRequest<Circle>(count: 2) { index, circle in circle.name = "b\(index)" }
        )
        #expect(inserted.inserted.map(\.entityName) == ["Circle", "Circle"])
        #expect(try context.count(FetchRequest<Shape>()) == 2)
    }

    @Test("adding a subentity under an entity that has objects is lightweight; both keep theirs")
    func subentityAddedUnderEntityWithObjects() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("shelves.olog")
        try writeStore(at: path, for: [ShelfV1.Shelf.self]) { context in
            for width in [60, 80, 120] {
                let shelf = ShelfV1.Shelf(context: context)
                shelf.name = "shelf \(width)"
                shelf.width = width
            }
        }
        for reopen in 0..<2 {
            let container = try PersistentContainer(path: path, for: ShelfV2.entities)
            let context = container.newContext()
            if reopen == 0 {
                let bookshelf = ShelfV2.Bookshelf(context: context)
                bookshelf.name = "bookshelf"
                bookshelf.width = 90
                bookshelf.books = 40
                try context.save()
            }
            let all = try context.fetch(
                FetchRequest<ShelfV2.Shelf>(sortBy: [SortDescriptor(\.width)])
            )
            #expect(all.map(\.width) == [60, 80, 90, 120])
            #expect(all.map { $0 is ShelfV2.Bookshelf } == [false, false, true, false])
            var own = FetchRequest<ShelfV2.Shelf>(predicate: #Predicate { $0.width >= 80 })
            own.includesSubentities = false
            #expect(try context.fetch(own).map(\.name).sorted() == ["shelf 120", "shelf 80"])
            let bookshelves = try context.fetch(FetchRequest<ShelfV2.Bookshelf>())
            #expect(bookshelves.map(\.books) == [40])
            try container.close()
        }
        let history = try #require(
            try ModelHistory.read(from: LogStore.open(path: path, options: .readOnlyExisting))
        )
        #expect(history.versions.count == 2)
        #expect(history.current?.schema.entity(named: "Bookshelf")?.superentity == "Shelf")
    }

    @Test("a batch insert that repeats a value unique across the hierarchy fails, writing nothing")
    func batchInsertUniqueAcrossHierarchy() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(
            path: directory.file("ledger.olog"),
            for: InheritedLedger.entities
        )
        let context = container.newContext()
        let credit = InheritedLedger.Credit(context: context)
        credit.reference = "r1"
        try context.save()
        let commits = container.coordinator.logStore!.statistics.commits
        let error = #expect(throws: ObjectLogError.self) {
            try context.execute(
                BatchInsertRequest<InheritedLedger.Debit>(count: 2) { index, debit in
                    debit.reference = "r\(index)"
                }
            )
        }
        #expect(error?.code == .uniqueness)
        #expect(container.coordinator.logStore!.statistics.commits == commits)
        #expect(try context.count(FetchRequest<InheritedLedger.Entry>()) == 1)
        // Values that clash with nothing in the hierarchy go in.
        let inserted = try context.execute(
            BatchInsertRequest<InheritedLedger.Debit>(count: 2) { index, debit in
                debit.reference = "d\(index)"
            }
        )
        #expect(inserted.inserted.count == 2)
        #expect(try context.count(FetchRequest<InheritedLedger.Entry>()) == 3)
        try container.close()
    }
}

/// A model before a hierarchy: plain entities.
enum HierarchyV1 {
    final class Item: ManagedObject {
        @Attribute var name = ""
        @Attribute var size = 0
        override class var entityName: String { "Item" }
    }

    /// Its properties in the other order than under Base, where `name` comes first.
    final class Special: ManagedObject {
        @Attribute var level = 0
        @Attribute var name = ""
        override class var entityName: String { "Special" }
    }
}

/// The same entity under a new abstract parent, beside a new subentity.
enum HierarchyV2 {
    class Base: ManagedObject {
        @Attribute(.unique) var name = ""
        override class var entityName: String { "Base" }
        override class var isAbstract: Bool { self == Base.self }
    }

    final class Item: Base {
        @Attribute var size = 0
        override class var entityName: String { "Item" }
    }

    final class Special: Base {
        @Attribute var level = 0
        override class var entityName: String { "Special" }
    }

    static let entities: [ManagedObject.Type] = [Item.self, Special.self]
}

/// Base as a concrete entity, with objects of its own.
enum HierarchyV3 {
    class Base: ManagedObject {
        @Attribute(.unique) var name = ""
        override class var entityName: String { "Base" }
    }

    final class Item: Base {
        @Attribute var size = 0
        override class var entityName: String { "Item" }
    }

    static let concrete: [ManagedObject.Type] = [Base.self, Item.self]
}

/// A hierarchy without relationships, which batch requests change in the store directly.
enum InheritedLedger {
    class Entry: ManagedObject {
        @Attribute(.unique) var reference = ""
        @Attribute var amount = 0.0
        @Attribute var isCleared = false
    }

    final class Credit: Entry {
        @Attribute var source = ""
    }

    final class Debit: Entry {
        @Attribute var reason = "unknown"
    }

    static let entities: [ManagedObject.Type] = [Entry.self, Credit.self, Debit.self]
}

/// An entity with objects of its own, before it has a subentity.
enum ShelfV1 {
    final class Shelf: ManagedObject {
        @Attribute var name = ""
        @Attribute var width = 0
        override class var entityName: String { "Shelf" }
    }
}

/// The same entity with a new subentity.
enum ShelfV2 {
    class Shelf: ManagedObject {
        @Attribute var name = ""
        @Attribute var width = 0
        override class var entityName: String { "Shelf" }
    }

    final class Bookshelf: Shelf {
        @Attribute var books = 0
        override class var entityName: String { "Bookshelf" }
    }

    static let entities: [ManagedObject.Type] = [Shelf.self, Bookshelf.self]
}
