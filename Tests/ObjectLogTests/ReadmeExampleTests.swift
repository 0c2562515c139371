import Foundation
import ObjectLog
import TestSupport
import Testing

// README "Use it as a framework": this file is the example, compiled and run by the tests, which
// also check that the README shows the code between the markers exactly.

// BEGIN README EXAMPLE
final class Experiment: ManagedObject {
    @Attribute(.unique) var name = ""
    @Attribute var feed = 0.055
    @Attribute var kill = 0.062
    @Attribute var created = Date()
    @Relationship(inverse: \Frame.experiment, deleteRule: .cascade) var frames: Set<Frame>
}

final class Frame: ManagedObject {
    @Attribute var step = 0
    @Attribute(.externalStorage) var state = Data()
    @Relationship var experiment: Experiment?
}

func readmeExample(path: String) throws -> [String] {
    // Open (or create) a store for the model.
    let container = try PersistentContainer(path: path, for: [Experiment.self, Frame.self])
    let context = container.newContext()

    // Keep per-document settings in the store metadata, updated before every save.
    var zoom = 2.0
    context.onWillSave { context in
        try context.coordinator.setMetadata(.double(zoom), forKey: "zoom")
    }

    // Insert objects and relate them; inverses follow.
    let spots = Experiment(context: context)
    spots.name = "Spots"
    for step in [100, 200] {
        let frame = Frame(context: context)
        frame.step = step
        frame.experiment = spots
    }
    let maze = Experiment(context: context)
    maze.name = "Maze"
    maze.feed = 0.029
    zoom = 3
    try context.save()

    // Fetch with a predicate and a sort order.
    let request = FetchRequest<Experiment>(
        predicate: #Predicate { $0.feed > 0.03 },
        sortBy: [SortDescriptor(\.name)]
    )
    let names = try context.fetch(request).map(\.name)
    // Read metadata without opening the store.
    let metadata = try PersistentContainer.metadataForStore(at: path)
    return names + ["frames: \(spots.frames.count)", "zoom: \(metadata["zoom"]?.doubleValue ?? 0)"]
}
// END README EXAMPLE

@Suite("README example")
struct ReadmeExampleTests {
    @Test("the README example runs and prints what it says")
    func example() throws {
        let directory = TemporaryDirectory()
        let output = try readmeExample(path: directory.file("Lab.objectlog"))
        #expect(output == ["Spots", "frames: 2", "zoom: 3.0"])
    }

    @Test("the README shows the example of this file exactly")
    func readmeMatchesThisFile() throws {
        let readme = try String(
            contentsOf: packageRoot(of: #filePath).appendingPathComponent("README.md"),
            encoding: .utf8
        )
        let section = try #require(
            readme.components(separatedBy: "## Use it as a framework\n").dropFirst().first,
            "the README has no section \"Use it as a framework\""
        )
        let shown = try #require(swiftCodeBlocks(in: section).first, "no Swift block in it")
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let compiled = try #require(
            source.components(separatedBy: "// BEGIN README EXAMPLE\n").dropFirst().first?
                .components(separatedBy: "// END README EXAMPLE\n").first
        )
        #expect(shown == compiled)
    }
}
