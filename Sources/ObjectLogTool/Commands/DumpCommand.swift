import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogStore

/// `objectlog dump PATH [--entity NAME] [--format ndjson|json] [--full-blobs]`: every live
/// object, read-only.
struct DumpCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "dump",
        abstract: "Print every live object as JSON: id, entity, attributes and relationships.",
        discussion: """
            Objects come in ascending id order, so the output is the same before and after \
            'objectlog compact'. Attributes are decoded with the model the engine keeps in the \
            store's metadata: dates as ISO 8601, binary values as base64, and binary values over \
            1024 bytes or in external blobs as their length and SHA-256 unless --full-blobs is \
            given. Relationships hold the target objects' ids. An object the model does not \
            describe shows its raw payload in base64. An object of an entity that inherits from \
            others lists them, nearest first, under "superentities". Objects stored as patches \
            (partial values) need the stored model to be merged with their bases: without one \
            the dump is refused with exit 65. The store is not changed.
            """,
        usage: "<path> [--entity <name>] [--format <format>] [--full-blobs]",
        arguments: [ArgumentDefinition(name: "path", help: "The store file.")],
        options: [
            .option(
                "--entity",
                value: "name",
                help: "Only objects of this entity and of the entities that inherit from it."
            ),
            .option(
                "--format",
                value: "format",
                help: "One object per line, or one JSON array (default: ndjson).",
                allowedValues: ["ndjson", "json"]
            ),
            .flag("--full-blobs", help: "Include the content of external blobs as base64."),
        ]
    )

    var path: String
    var entityName: String?
    var isArray: Bool
    var fullBlobs: Bool

    init(_ arguments: ParsedArguments, context: CommandContext) {
        path = arguments.positionals[0]
        entityName = arguments.value("--entity")
        isArray = arguments.value("--format") == "json"
        fullBlobs = arguments.flag("--full-blobs")
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let store = try StoreAccess.openSalvaging(path)
        defer { try? store.close() }
        let names = EntityNames(store: store)
        // The entity asked for and the entities that inherit from it, as a fetch of it has.
        var entities: Set<EntityTag>?
        if let entityName {
            guard let tag = names.tag(named: entityName) else {
                let known = names.countsByName(store.liveCounts).map(\.name)
                throw CommandError.usage(
                    "no entity named '\(entityName)' in \(path) (entities: "
                        + (known.isEmpty ? "none" : known.joined(separator: ", ")) + ")",
                    command: context.commandName
                )
            }
            entities = names.familyTags(of: tag)
        }
        if let problem = names.schemaProblem {
            context.warn("\(path): \(problem); objects are shown with their raw payloads")
        }
        var blobSizes: [BlobID: UInt64] = [:]
        for (id, bytes) in try store.blobFiles() { blobSizes[id] = bytes }
        let rendering = ObjectRendering(
            store: store,
            names: names,
            fullBlobs: fullBlobs,
            blobSizes: blobSizes
        )

        let only = entities.flatMap { $0.count == 1 ? $0.first : nil }
        let keys = store.liveKeys(entity: only).filter { key in
            guard let tag = store.location(of: key)?.entity else { return false }
            // The records that hold the stored model versions are not objects.
            if tag == ModelHistory.schemaEntityTag { return false }
            return entities == nil || only != nil || entities!.contains(tag)
        }
        // Refused before anything is printed.
        try names.requireMerge(
            of: keys,
            in: store,
            path: path,
            remedy: "read the store with the program that wrote it, which merges patches "
                + "(LogStore.installPatchMerge)"
        )

        let output = context.output
        if isArray { output.write("[") }
        var first = true
        for key in keys {
            guard let object = try rendering.json(key: key) else { continue }
            if isArray {
                output.write(first ? "\n  " : ",\n  ")
                output.write(
                    object.rendered(pretty: true).replacingOccurrences(of: "\n", with: "\n  ")
                )
            } else {
                output.writeLine(object.rendered())
            }
            first = false
        }
        if isArray { output.writeLine(first ? "]" : "\n]") }
        return try DamageRendering.finish(store.damageAtOpen, path: path, context: context)
    }
}
