import Foundation
import ObjectLog
import StoreTestSupport
import TestSupport
import Testing

// Pairs of model versions, each for one kind of change a lightweight migration makes: the same
// tests run on every store that keeps its data, so a database must end where a file does.

/// A subentity that the second version removes, while objects of others refer to its objects.
enum RemovedSub {
    enum V1 {
        class Folder: ManagedObject {
            @Attribute var name = ""
            @Relationship(inverse: \Note.folder) var notes: Set<Note>
            override class var entityName: String { "Folder" }
        }

        final class SmartFolder: Folder {
            @Attribute var query = ""
            override class var entityName: String { "SmartFolder" }
        }

        final class Note: ManagedObject {
            @Attribute var title = ""
            @Relationship var folder: Folder?
            @Relationship var links: Set<Folder>
            override class var entityName: String { "Note" }
        }

        static let entities: [ManagedObject.Type] = [Folder.self, SmartFolder.self, Note.self]
    }

    enum V2 {
        final class Folder: ManagedObject {
            @Attribute var name = ""
            @Relationship(inverse: \Note.folder) var notes: Set<Note>
            override class var entityName: String { "Folder" }
        }

        final class Note: ManagedObject {
            @Attribute var title = ""
            @Relationship var folder: Folder?
            @Relationship var links: Set<Folder>
            override class var entityName: String { "Note" }
        }

        static let entities: [ManagedObject.Type] = [Folder.self, Note.self]
    }
}

/// Two entities that the second version puts under a new abstract superentity.
enum NewParent {
    enum V1 {
        final class Circle: ManagedObject {
            @Attribute var name = ""
            @Attribute var radius = 0.0
            @Relationship var canvas: Canvas?
            override class var entityName: String { "Circle" }
        }

        final class Square: ManagedObject {
            @Attribute var name = ""
            @Attribute var side: Int32 = 0
            override class var entityName: String { "Square" }
        }

        final class Canvas: ManagedObject {
            @Attribute var title = ""
            @Relationship(inverse: \Circle.canvas) var circles: [Circle]
            override class var entityName: String { "Canvas" }
        }

        static let entities: [ManagedObject.Type] = [Circle.self, Square.self, Canvas.self]
    }

    enum V2 {
        class Shape: ManagedObject {
            @Attribute(.unique) var name = ""
            override class var entityName: String { "Shape" }
            override class var isAbstract: Bool { self == Shape.self }
        }

        final class Circle: Shape {
            @Attribute var radius = 0.0
            @Relationship var canvas: Canvas?
            override class var entityName: String { "Circle" }
        }

        final class Square: Shape {
            // Widened on the way.
            @Attribute var side: Int64 = 0
            override class var entityName: String { "Square" }
        }

        final class Canvas: ManagedObject {
            @Attribute var title = ""
            @Relationship(inverse: \Circle.canvas) var circles: [Circle]
            override class var entityName: String { "Canvas" }
        }

        static let entities: [ManagedObject.Type] = [Circle.self, Square.self, Canvas.self]
    }
}

/// Relationships that change: a to-one becomes a to-many (a many-to-many with its inverse),
/// and a many-to-many whose entities and relationships are renamed.
enum Relationships {
    enum V1 {
        final class Author: ManagedObject {
            @Attribute var name = ""
            @Relationship(inverse: \Book.author) var books: Set<Book>
            override class var entityName: String { "Author" }
        }

        final class Book: ManagedObject {
            @Attribute var title = ""
            @Relationship var author: Author?
            @Relationship(inverse: \Tag.books) var tags: Set<Tag>
            override class var entityName: String { "Book" }
        }

        final class Tag: ManagedObject {
            @Attribute var name = ""
            @Relationship var books: Set<Book>
            override class var entityName: String { "Tag" }
        }

        static let entities: [ManagedObject.Type] = [Author.self, Book.self, Tag.self]
    }

    enum V2 {
        final class Author: ManagedObject {
            @Attribute var name = ""
            @Relationship(inverse: \Volume.authors) var books: Set<Volume>
            override class var entityName: String { "Author" }
        }

        final class Volume: ManagedObject {
            @Attribute var title = ""
            @Relationship var authors: Set<Author>
            @Relationship(inverse: \Keyword.books) var keywords: Set<Keyword>
            override class var entityName: String { "Volume" }
            override class var originalEntityName: String? { "Book" }
            override class var originalPropertyNames: [String: String] {
                ["authors": "author", "keywords": "tags"]
            }
        }

        final class Keyword: ManagedObject {
            @Attribute var name = ""
            @Relationship var books: Set<Volume>
            override class var entityName: String { "Keyword" }
            override class var originalEntityName: String? { "Tag" }
        }

        static let entities: [ManagedObject.Type] = [Author.self, Volume.self, Keyword.self]
    }
}

/// A to-many relationship that becomes ordered, and one that gains an inverse.
enum ListChanges {
    enum V1 {
        final class Playlist: ManagedObject {
            @Attribute var name = ""
            @Relationship(inverse: \Song.playlist) var songs: Set<Song>
            @Relationship var favourites: Set<Song>
            override class var entityName: String { "Playlist" }
        }

        final class Song: ManagedObject {
            @Attribute var title = ""
            @Relationship var playlist: Playlist?
            override class var entityName: String { "Song" }
        }

        static let entities: [ManagedObject.Type] = [Playlist.self, Song.self]
    }

    enum V2 {
        final class Playlist: ManagedObject {
            @Attribute var name = ""
            @Relationship(inverse: \Song.playlist) var songs: [Song]
            @Relationship(inverse: \Song.favouredBy) var favourites: Set<Song>
            override class var entityName: String { "Playlist" }
        }

        final class Song: ManagedObject {
            @Attribute var title = ""
            @Relationship var playlist: Playlist?
            @Relationship var favouredBy: Playlist?
            override class var entityName: String { "Song" }
        }

        static let entities: [ManagedObject.Type] = [Playlist.self, Song.self]
    }
}

/// Uniqueness constraints through a rename: one kept (its entity and attribute renamed), one
/// removed, one added.
enum Constraints {
    enum V1 {
        final class Folder: ManagedObject {
            @Attribute(.unique) var name = ""
            @Attribute(.unique) var code = ""
            @Attribute var slug = ""
            override class var entityName: String { "Folder" }
        }

        static let entities: [ManagedObject.Type] = [Folder.self]
    }

    enum V2 {
        final class Collection: ManagedObject {
            @Attribute(.unique, originalName: "name") var label = ""
            @Attribute var code = ""
            @Attribute(.unique) var slug = ""
            override class var entityName: String { "Collection" }
            override class var originalEntityName: String? { "Folder" }
        }

        static let entities: [ManagedObject.Type] = [Collection.self]
    }
}

/// Subentities with attributes of one name (one column in a database), one of them renamed;
/// data that moves to and from external storage; an optional attribute that becomes required.
enum Columns {
    enum V1 {
        class Item: ManagedObject {
            @Attribute var name = ""
            override class var entityName: String { "Item" }
        }

        final class Book: Item {
            @Attribute var code = ""
            @Attribute var cover = Data()
            @Attribute(.externalStorage) var scan = Data()
            @Attribute var note: String? = nil
            override class var entityName: String { "Book" }
        }

        final class Toy: Item {
            @Attribute var code = ""
            override class var entityName: String { "Toy" }
        }

        static let entities: [ManagedObject.Type] = [Item.self, Book.self, Toy.self]
    }

    enum V2 {
        class Item: ManagedObject {
            @Attribute var name = ""
            override class var entityName: String { "Item" }
        }

        final class Book: Item {
            @Attribute(originalName: "code") var isbn = ""
            @Attribute(.externalStorage) var cover = Data()
            @Attribute var scan = Data()
            @Attribute var note = "none"
            override class var entityName: String { "Book" }
        }

        final class Toy: Item {
            @Attribute var code = ""
            override class var entityName: String { "Toy" }
        }

        static let entities: [ManagedObject.Type] = [Item.self, Book.self, Toy.self]
    }
}

/// An entity that the second version makes abstract, under a new concrete subentity.
enum Abstracted {
    enum V1 {
        final class Animal: ManagedObject {
            @Attribute var name = ""
            override class var entityName: String { "Animal" }
        }

        static let entities: [ManagedObject.Type] = [Animal.self]
    }

    enum V2 {
        class Animal: ManagedObject {
            @Attribute var name = ""
            override class var entityName: String { "Animal" }
            override class var isAbstract: Bool { self == Animal.self }
        }

        final class Cat: Animal {
            @Attribute var lives = 9
            override class var entityName: String { "Cat" }
        }

        static let entities: [ManagedObject.Type] = [Animal.self, Cat.self]
    }
}

@Suite("Lightweight migration: each kind of change, on every store that keeps its data")
struct MigrationChangeTests {
    @Test(
        "a removed subentity's objects are deleted, and references to them read as none",
        arguments: TestStoreKind.persistent
    )
    func removedSubentity(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: RemovedSub.V1.entities) { context in
            let plain = RemovedSub.V1.Folder(context: context)
            plain.name = "plain"
            let smart = RemovedSub.V1.SmartFolder(context: context)
            smart.name = "smart"
            smart.query = "starred"
            for (index, folder) in [plain, smart, smart].enumerated() {
                let note = RemovedSub.V1.Note(context: context)
                note.title = "note \(index)"
                note.folder = folder
                note.links = [plain, smart]
            }
        }
        // Undeclared, the removal is refused.
        let before = try store.contents()
        #expect(throws: ObjectLogError.self) { try store.open(for: RemovedSub.V2.entities) }
        #expect(try store.contents() == before)
        let container = try store.open(for: RemovedSub.V2.entities, removing: ["SmartFolder"])
        let context = container.newContext()
        let notes = try context.fetch(RemovedSub.V2.Note.self).sorted { $0.title < $1.title }
        #expect(notes.map(\.title) == ["note 0", "note 1", "note 2"])
        #expect(notes.map { $0.folder?.name } == ["plain", nil, nil])
        #expect(notes.map { $0.links.map(\.name) } == [["plain"], ["plain"], ["plain"]])
        let folders = try context.fetch(RemovedSub.V2.Folder.self)
        #expect(folders.map(\.name) == ["plain"])
        #expect(folders.first?.notes.map(\.title) == ["note 0"])
        // The objects save on: a note moves to the remaining folder.
        notes[1].folder = folders.first
        try context.save()
        try container.close()
        let reopened = try store.open(for: RemovedSub.V2.entities, removing: ["SmartFolder"])
        let reading = reopened.newContext()
        let again = try reading.fetch(RemovedSub.V2.Folder.self)
        #expect(again.first?.notes.map(\.title).sorted() == ["note 0", "note 1"])
        try reopened.close()
    }

    @Test(
        "entities that gain a superentity keep their objects, values and ordered relationships",
        arguments: TestStoreKind.persistent
    )
    func newSuperentity(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: NewParent.V1.entities) { context in
            let canvas = NewParent.V1.Canvas(context: context)
            canvas.title = "board"
            for (name, radius) in [("c2", 2.5), ("c1", 1.5), ("c3", 3.5)] {
                let circle = NewParent.V1.Circle(context: context)
                circle.name = name
                circle.radius = radius
                canvas.circles.append(circle)
            }
            let square = NewParent.V1.Square(context: context)
            square.name = "s1"
            square.side = -4
        }
        let container = try store.open(for: NewParent.V2.entities)
        let context = container.newContext()
        let canvas = try #require(try context.fetch(NewParent.V2.Canvas.self).first)
        #expect(canvas.circles.map(\.name) == ["c2", "c1", "c3"], "the order is kept")
        #expect(canvas.circles.map(\.radius) == [2.5, 1.5, 3.5])
        #expect(canvas.circles.allSatisfy { $0.canvas === canvas })
        let shapes = try context.fetch(NewParent.V2.Shape.self).map(\.name).sorted()
        #expect(shapes == ["c1", "c2", "c3", "s1"])
        let squares = try context.fetch(NewParent.V2.Square.self)
        #expect(squares.map(\.side) == [-4])
        // The new superentity's constraint spans both entities.
        let clash = NewParent.V2.Square(context: context)
        clash.name = "c1"
        let error = #expect(throws: ObjectLogError.self) { try context.save() }
        #expect(error?.code == .uniqueness)
        context.rollback()
        let circle = NewParent.V2.Circle(context: context)
        circle.name = "c4"
        canvas.circles.insert(circle, at: 0)
        try context.save()
        try container.close()
        let reopened = try store.open(for: NewParent.V2.entities)
        let reading = reopened.newContext()
        let saved = try #require(try reading.fetch(NewParent.V2.Canvas.self).first)
        #expect(saved.circles.map(\.name) == ["c4", "c2", "c1", "c3"])
        try reopened.close()
    }

    @Test(
        "a to-one becomes a to-many, and renamed entities and relationships keep their pairs",
        arguments: TestStoreKind.persistent
    )
    func relationshipChanges(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: Relationships.V1.entities) { context in
            let authors = ["Ann", "Bob"].map { name in
                let author = Relationships.V1.Author(context: context)
                author.name = name
                return author
            }
            let tags = ["fiction", "history", "maps"].map { name in
                let tag = Relationships.V1.Tag(context: context)
                tag.name = name
                return tag
            }
            for (index, title) in ["A", "B", "C", "D"].enumerated() {
                let book = Relationships.V1.Book(context: context)
                book.title = title
                book.author = index == 3 ? nil : authors[index % 2]
                book.tags = Set(tags.enumerated().filter { $0.offset <= index }.map(\.element))
            }
        }
        let container = try store.open(for: Relationships.V2.entities)
        let context = container.newContext()
        let volumes = try context.fetch(Relationships.V2.Volume.self).sorted { $0.title < $1.title }
        #expect(volumes.map(\.title) == ["A", "B", "C", "D"])
        #expect(volumes.map { $0.authors.map(\.name) } == [["Ann"], ["Bob"], ["Ann"], []])
        #expect(
            volumes.map { $0.keywords.map(\.name).sorted() } == [
                ["fiction"], ["fiction", "history"], ["fiction", "history", "maps"],
                ["fiction", "history", "maps"],
            ]
        )
        let authors = try context.fetch(Relationships.V2.Author.self).sorted { $0.name < $1.name }
        #expect(authors.map { $0.books.map(\.title).sorted() } == [["A", "C"], ["B"]])
        let keywords = try context.fetch(Relationships.V2.Keyword.self).sorted {
            $0.name < $1.name
        }
        #expect(keywords.map { $0.books.count } == [4, 3, 2])
        // Saves on: a volume gets a second author.
        volumes[0].authors.insert(authors[1])
        try context.save()
        try container.close()
        let reopened = try store.open(for: Relationships.V2.entities)
        let reading = reopened.newContext()
        let bob = try reading.fetch(Relationships.V2.Author.self).first {
            $0.name == "Bob"
        }
        #expect(bob?.books.map(\.title).sorted() == ["A", "B"])
        try reopened.close()
    }

    @Test(
        "a to-many that becomes ordered keeps its objects; one that gains an inverse keeps them",
        arguments: TestStoreKind.persistent
    )
    func listChanges(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: ListChanges.V1.entities) { context in
            let playlist = ListChanges.V1.Playlist(context: context)
            playlist.name = "mix"
            let songs = ["b", "a", "c"].map { title in
                let song = ListChanges.V1.Song(context: context)
                song.title = title
                return song
            }
            playlist.songs = Set(songs)
            playlist.favourites = [songs[0], songs[2]]
        }
        let container = try store.open(for: ListChanges.V2.entities)
        let context = container.newContext()
        let playlist = try #require(try context.fetch(ListChanges.V2.Playlist.self).first)
        // In the order the unordered relationship read in: it kept none of its own.
        #expect(playlist.songs.map(\.title).sorted() == ["a", "b", "c"])
        #expect(playlist.favourites.map(\.title).sorted() == ["b", "c"])
        // The new inverse: a database keeps the relationship in the inverse's column, so it
        // reads the owner there; a file reads it as the objects saved it (none) until saved.
        let songs = try context.fetch(ListChanges.V2.Song.self).sorted { $0.title < $1.title }
        #expect(
            songs.map { $0.favouredBy?.name }
                == (kind == .postgreSQL ? [nil, "mix", "mix"] : [nil, nil, nil])
        )
        var reordered = playlist.songs
        reordered.insert(reordered.removeLast(), at: 0)
        playlist.songs = reordered
        let order = reordered.map(\.title)
        try context.save()
        try container.close()
        let reopened = try store.open(for: ListChanges.V2.entities)
        let reading = reopened.newContext()
        let saved = try #require(try reading.fetch(ListChanges.V2.Playlist.self).first)
        #expect(saved.songs.map(\.title) == order)
        #expect(saved.favourites.map(\.title).sorted() == ["b", "c"])
        try reopened.close()
    }

    @Test(
        "uniqueness constraints follow renames; a removed one no longer holds, an added one does",
        arguments: TestStoreKind.persistent
    )
    func constraintChanges(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: Constraints.V1.entities) { context in
            for index in 0..<3 {
                let folder = Constraints.V1.Folder(context: context)
                folder.name = "folder \(index)"
                folder.code = "F\(index)"
                folder.slug = "f-\(index)"
            }
        }
        let container = try store.open(for: Constraints.V2.entities)
        let context = container.newContext()
        let collections = try context.fetch(Constraints.V2.Collection.self).sorted {
            $0.label < $1.label
        }
        #expect(collections.map(\.label) == ["folder 0", "folder 1", "folder 2"])
        #expect(collections.map(\.code) == ["F0", "F1", "F2"])
        #expect(collections.map(\.slug) == ["f-0", "f-1", "f-2"])
        // The code is no longer unique.
        collections[1].code = "F0"
        try context.save()
        // The renamed label still is, and the slug now is.
        for (label, slug) in [("folder 2", "new"), ("new", "f-2")] {
            let duplicate = Constraints.V2.Collection(context: context)
            duplicate.label = label
            duplicate.slug = slug
            duplicate.code = "F9"
            let error = #expect(throws: ObjectLogError.self) { try context.save() }
            #expect(error?.code == .uniqueness)
            context.rollback()
        }
        try container.close()
    }

    @Test(
        "attributes of one name in sibling entities, external storage both ways, nil to default",
        arguments: TestStoreKind.persistent
    )
    func columnChanges(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let large = Data((0..<40_000).map { UInt8($0 % 251) })
        try writeStore(store, for: Columns.V1.entities) { context in
            let book = Columns.V1.Book(context: context)
            book.name = "atlas"
            book.code = "978-0"
            book.cover = large
            book.scan = Data(large.reversed())
            let small = Columns.V1.Book(context: context)
            small.name = "leaflet"
            small.code = "978-1"
            small.cover = Data([1, 2, 3])
            small.scan = Data([4, 5])
            small.note = "thin"
            let toy = Columns.V1.Toy(context: context)
            toy.name = "ball"
            toy.code = "T-1"
        }
        let container = try store.open(for: Columns.V2.entities)
        let context = container.newContext()
        let books = try context.fetch(Columns.V2.Book.self).sorted { $0.name < $1.name }
        #expect(books.map(\.name) == ["atlas", "leaflet"])
        #expect(books.map(\.isbn) == ["978-0", "978-1"])
        #expect(books.map(\.cover) == [large, Data([1, 2, 3])])
        #expect(books.map(\.scan) == [Data(large.reversed()), Data([4, 5])])
        #expect(books.map(\.note) == ["none", "thin"])
        let toys = try context.fetch(Columns.V2.Toy.self)
        #expect(toys.map(\.code) == ["T-1"])
        #expect(
            try context.fetch(Columns.V2.Item.self).map(\.name).sorted() == [
                "atlas", "ball", "leaflet",
            ]
        )
        books[0].cover = Data([9])
        try context.save()
        try container.close()
        let reopened = try store.open(for: Columns.V2.entities)
        let reading = reopened.newContext()
        let saved = try reading.fetch(Columns.V2.Book.self).sorted { $0.name < $1.name }
        #expect(saved.map(\.cover) == [Data([9]), Data([1, 2, 3])])
        #expect(saved.map(\.scan) == [Data(large.reversed()), Data([4, 5])])
        try reopened.close()
    }

    @Test(
        "an entity made abstract is refused while it has objects, and migrates once it has none",
        arguments: TestStoreKind.persistent
    )
    func madeAbstract(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: Abstracted.V1.entities) { context in
            Abstracted.V1.Animal(context: context).name = "generic"
        }
        let before = try store.contents()
        let error = #expect(throws: ObjectLogError.self) {
            try store.open(for: Abstracted.V2.entities)
        }
        #expect(error?.message.contains("'Animal' became abstract") == true)
        #expect(try store.contents() == before)
        let emptied = try store.open(for: Abstracted.V1.entities)
        let context = emptied.newContext()
        for animal in try context.fetch(Abstracted.V1.Animal.self) { context.delete(animal) }
        try context.save()
        try emptied.close()
        let container = try store.open(for: Abstracted.V2.entities)
        let catContext = container.newContext()
        Abstracted.V2.Cat(context: catContext).name = "tom"
        try catContext.save()
        try container.close()
        let reopened = try store.open(for: Abstracted.V2.entities)
        let animals = try reopened.newContext().fetch(Abstracted.V2.Animal.self)
        #expect(animals.map(\.name) == ["tom"])
        try reopened.close()
    }
}
