import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import ObjectLogStore

/// `objectlog dump PATH|URI [--entity NAME] [--format ndjson|json] [--full-blobs] [--as-of N]`:
/// every live object, read-only, printed the same for the same data in a store file and in a
/// database; with `--as-of`, as they were when transaction N committed.
struct DumpCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "dump",
        abstract: "Print every live object as JSON: id, entity, attributes and relationships.",
        discussion: """
            Objects come in ascending id order, so the output is the same before and after \
            'objectlog compact', and the same for a store file and for the database 'objectlog \
            export' copied it into (a postgresql:// URI). Attributes are decoded with the model \
            the engine keeps in the store's metadata: dates as ISO 8601, binary values as \
            base64, and binary values over 1024 bytes as their length and SHA-256 unless \
            --full-blobs is given; data of an external-storage attribute always shows as its \
            length and SHA-256 (and its base64 with --full-blobs), wherever the store keeps it. \
            Relationships hold the target objects' ids, in id order unless the relationship is \
            ordered. An object the model does not \
            describe shows its raw payload in base64. An object of an entity that inherits from \
            others lists them, nearest first, under "superentities". Objects stored as patches \
            (partial values) need the stored model to be merged with their bases: without one \
            the dump is refused with exit 65. With --as-of N, the objects are those of the \
            store when transaction N committed (numbers as 'objectlog history' lists them), \
            within the history the store keeps: a transaction not committed yet exits 64, one \
            whose history is gone 65. The store is not changed.
            """,
        usage: "<path> [--entity <name>] [--format <format>] [--full-blobs] [--as-of <n>]",
        arguments: [
            ArgumentDefinition(
                name: "path",
                help: "The store file, or a postgresql:// URI of a database that holds a store."
            )
        ],
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
            .option(
                "--as-of",
                value: "n",
                help: "The objects as they were when transaction n committed (a store file)."
            ),
        ]
    )

    var path: String
    var entityName: String?
    var isArray: Bool
    var fullBlobs: Bool
    var asOf: UInt64?

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        path = arguments.positionals[0]
        entityName = arguments.value("--entity")
        isArray = arguments.value("--format") == "json"
        fullBlobs = arguments.flag("--full-blobs")
        if let text = arguments.value("--as-of") {
            guard let number = UInt64(text) else {
                throw CommandError(
                    "--as-of takes a transaction number (0 or more), not '\(text)'",
                    exitCode: .usage
                )
            }
            asOf = number
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        if StoreLocation.isDatabase(path) {
            guard asOf == nil else {
                throw CommandError(
                    "--as-of needs a store file: a database keeps each object's latest values "
                        + "only",
                    exitCode: .usage
                )
            }
            return try runOnDatabase(context)
        }
        let store = try StoreAccess.openSalvaging(path)
        defer { try? store.close() }
        let names = EntityNames(store: store)
        // The entity asked for and the entities that inherit from it, as a fetch of it has.
        let entities = try selectedEntities(
            names,
            known: names.countsByName(store.liveCounts).map(\.name),
            shownAs: path,
            context: context
        )
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

        if let asOf {
            return try runAsOf(
                asOf,
                store: store,
                entities: entities,
                rendering: rendering,
                context
            )
        }
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

        var printer = Printer(output: context.output, isArray: isArray)
        for key in keys {
            guard let object = try rendering.json(key: key) else { continue }
            printer.print(object)
        }
        printer.finish()
        return try DamageRendering.finish(store.damageAtOpen, path: path, context: context)
    }

    /// The dump as of transaction `number`: the objects of the store's snapshot then.
    private func runAsOf(
        _ number: UInt64,
        store: LogStore,
        entities: Set<EntityTag>?,
        rendering: ObjectRendering,
        _ context: CommandContext
    ) throws -> ExitCode {
        let snapshot: LogSnapshot
        do {
            snapshot = try store.snapshot(asOf: number)
        } catch let refusal as LogSnapshot.Refusal {
            switch refusal {
            case .notCommitted(let message):
                throw CommandError("\(path): \(message)", exitCode: .usage)
            case .historyGone(let message), .beforeMigration(let message):
                throw CommandError("\(path): \(message)", exitCode: .dataError)
            }
        }
        var printer = Printer(output: context.output, isArray: isArray)
        for key in snapshot.objects.keys.sorted() {
            let (tag, value) = snapshot.objects[key]!
            // The records that hold the stored model versions are not objects.
            guard tag != ModelHistory.schemaEntityTag, entities?.contains(tag) ?? true else {
                continue
            }
            var object: JSONValue?
            try store.withHistoryValue(of: key, value, in: snapshot.history) { payload, blobs in
                object = try rendering.json(
                    key: key,
                    entity: tag,
                    payload: payload,
                    blobs: blobs,
                    offset: nil
                )
            }
            if let object { printer.print(object) }
        }
        printer.finish()
        return .success
    }

    /// The dump of the store a database holds, read as one snapshot.
    private func runOnDatabase(_ context: CommandContext) throws -> ExitCode {
        let store = try PostgresStore.openExisting(url: path)
        defer { try? store.close() }
        let shown = store.displayName
        let objects = try store.readingSnapshot { () throws -> [(ObjectKey, JSONValue)] in
            let names = EntityNames(store: store)
            guard let schema = names.schema else {
                throw CommandError(
                    "\(shown): " + (names.schemaProblem ?? "the store records no model"),
                    exitCode: .dataError
                )
            }
            let entities = try selectedEntities(
                names,
                known: schema.entities.map(\.name).sorted(),
                shownAs: shown,
                context: context
            )
            let rendering = ObjectRendering(
                store: store,
                names: names,
                fullBlobs: fullBlobs,
                blobSizes: [:]
            )
            let only = entities.flatMap { $0.count == 1 ? $0.first : nil }
            var objects: [(ObjectKey, JSONValue)] = []
            try store.forEachLiveObject(entity: only) { key, tag, payload in
                guard tag != ModelHistory.schemaEntityTag,
                    entities == nil || entities!.contains(tag)
                else { return }
                let object = try rendering.json(
                    key: key,
                    entity: tag,
                    payload: payload,
                    blobs: [],
                    offset: nil
                )
                objects.append((key, object))
            }
            return objects.sorted { $0.0 < $1.0 }
        }
        var printer = Printer(output: context.output, isArray: isArray)
        for (_, object) in objects { printer.print(object) }
        printer.finish()
        return .success
    }

    /// The tags of the entity `--entity` names and of the entities that inherit from it; nil
    /// without `--entity`.
    ///
    /// - Throws: ``CommandError`` (usage) naming the `known` entities when the store has none
    ///   of that name.
    private func selectedEntities(
        _ names: EntityNames,
        known: [String],
        shownAs shown: String,
        context: CommandContext
    ) throws(CommandError) -> Set<EntityTag>? {
        guard let entityName else { return nil }
        guard let tag = names.tag(named: entityName) else {
            throw CommandError.usage(
                "no entity named '\(entityName)' in \(shown) (entities: "
                    + (known.isEmpty ? "none" : known.joined(separator: ", ")) + ")",
                command: context.commandName
            )
        }
        return names.familyTags(of: tag)
    }

    /// Writes objects one a line, or as one JSON array.
    private struct Printer {
        let output: TextOutput
        let isArray: Bool
        private var isFirst = true

        init(output: TextOutput, isArray: Bool) {
            self.output = output
            self.isArray = isArray
            if isArray { output.write("[") }
        }

        mutating func print(_ object: JSONValue) {
            if isArray {
                output.write(isFirst ? "\n  " : ",\n  ")
                output.write(
                    object.rendered(pretty: true).replacingOccurrences(of: "\n", with: "\n  ")
                )
            } else {
                output.writeLine(object.rendered())
            }
            isFirst = false
        }

        func finish() {
            if isArray { output.writeLine(isFirst ? "]" : "\n]") }
        }
    }
}
