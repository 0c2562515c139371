import CommandLineKit
import ObjectLog
import ObjectLogPostgreSQL
import ObjectLogStore

/// `objectlog info PATH|URI [--json]`: what a store is and holds, read without changing it.
struct InfoCommand: StoreReportCommand {
    static let configuration = CommandConfiguration.storeReport(
        name: "info",
        abstract: "Show a store's format, identity, metadata, entities, sizes and index state.",
        discussion: """
            Reads the store without changing it (not even its modification time), so it is safe \
            on a store another process is writing. Reclaimable bytes are what 'objectlog \
            compact' would free. History says how much the store's history retention keeps \
            across compactions and from which transaction its history is there ('objectlog \
            history --changes' lists it). For a postgresql:// URI it shows the server (user, host, port \
            and database, never a password) and its version, the transactions, the model \
            version, the objects of each entity and the metadata; a database has no file, \
            index or blob sizes to show.
            """,
        jsonHelp: "Print one JSON object instead of text.",
        pathHelp: "The store file, or a postgresql:// URI of a database that holds a store."
    )

    var path: String
    var json: Bool

    func run(_ context: CommandContext) throws -> ExitCode {
        if StoreLocation.isDatabase(path) { return try runOnDatabase(context) }
        let inspection = try StoreAccess.inspect(path, checkBlobs: false)
        let names = EntityNames(path: path, metadata: inspection.metadata)
        let reclaimable =
            inspection.fileBytes > inspection.liveBytes
            ? inspection.fileBytes - inspection.liveBytes : 0
        let share =
            inspection.fileBytes == 0 ? 0 : Double(reclaimable) / Double(inspection.fileBytes)
        let transactionsInFile = inspection.transactions.filter { !$0.isCompaction }.count
        let entities = names.countsByName(inspection.liveCounts)
        let liveObjects = inspection.liveObjects.values.filter {
            $0.entity != ModelHistory.schemaEntityTag
        }.count
        let modelHash = inspection.metadata[PersistentStoreCoordinator.modelHashKey]?.stringValue
        let history = try HistorySummary(
            path: path,
            metadata: inspection.metadata,
            storeUUID: inspection.storeUUID,
            base: inspection.baseTransactionCount
        )
        // The version that wrote the store last, when the store keeps its versions.
        let modelVersion = names.history.flatMap { history in
            history.current.map {
                (number: history.versions.count, transaction: $0.transaction)
            }
        }

        if json {
            var members: [(String, JSONValue)] =
                [
                    ("path", .string(path)),
                    ("formatVersion", .string(inspection.formatVersion)),
                    ("storeUUID", .string(inspection.storeUUID.uuidString)),
                    ("generation", .unsigned(inspection.generation)),
                    ("transactions", .unsigned(inspection.transactionCount)),
                    ("transactionsInFile", .number(transactionsInFile)),
                    ("fileBytes", .unsigned(inspection.fileBytes)),
                    ("liveBytes", .unsigned(inspection.liveBytes)),
                    ("reclaimableBytes", .unsigned(reclaimable)),
                    ("reclaimableShare", .double((share * 10_000).rounded() / 10_000)),
                    ("liveObjects", .number(liveObjects)),
                ] + Self.modelMembers(entities, names, modelHash, modelVersion) + [
                    ("blobCount", .number(inspection.blobCount)),
                    ("blobBytes", .unsigned(inspection.blobBytes)),
                    ("indexStatus", .string(inspection.indexStatus.rawValue)),
                    ("history", history.json),
                    ("metadata", MetadataRendering.json(inspection.metadata)),
                ]
            members.append(("damage", DamageRendering.json(inspection.damage)))
            context.output.writeLine(JSONValue.object(members).rendered(pretty: true))
        } else {
            let output = context.output
            func line(_ label: String, _ value: String) {
                output.writeLine(Formatting.rightPadded(label + ":", 17) + value)
            }
            line("store", path)
            line("format version", inspection.formatVersion)
            line("store UUID", inspection.storeUUID.uuidString)
            line("generation", String(inspection.generation))
            line(
                "transactions",
                "\(inspection.transactionCount) committed (\(transactionsInFile) in this file "
                    + "since the last compaction)"
            )
            line("file bytes", Formatting.bytes(inspection.fileBytes))
            line("live bytes", Formatting.bytes(inspection.liveBytes))
            line(
                "reclaimable",
                Formatting.bytes(reclaimable) + ", \(Formatting.percentage(share)) of the file"
                    + (share >= 0.5 && reclaimable >= 64 << 10
                        ? " ('objectlog compact \(path)' would reclaim it)" : "")
            )
            line(
                "external blobs",
                "\(inspection.blobCount), \(Formatting.bytes(inspection.blobBytes))"
            )
            line("index", inspection.indexStatus.rawValue)
            line("history", history.text)
            line("live objects", String(liveObjects))
            if let modelHash { line("model hash", modelHash) }
            if let modelVersion {
                line(
                    "model version",
                    "\(modelVersion.number), since transaction \(modelVersion.transaction) "
                        + "('objectlog schema' lists every version)"
                )
            }
            if let problem = names.schemaProblem { line("model", problem) }
            if let damage = DamageRendering.reported(inspection.damage) {
                line("damage", damage.description)
            }
            Self.write(entities, names, inspection.metadata, to: output)
        }
        return try DamageRendering.finish(inspection.damage, path: path, context: context)
    }

    /// What the store a database holds is and holds, read as one snapshot.
    private func runOnDatabase(_ context: CommandContext) throws -> ExitCode {
        let store = try PostgresStore.openExisting(url: path)
        defer { try? store.close() }
        let target = store.displayName
        let (metadata, transactions, names, counts) = try store.readingSnapshot {
            let metadata = try store.readMetadata()
            let transactions = try store.transactionCount
            let names = EntityNames(store: store)
            var counts: [EntityTag: Int] = [:]
            for entity in names.schema?.entities ?? [] {
                counts[entity.tag] = try store.liveCount(entity: entity.tag)
            }
            return (metadata, transactions, names, counts)
        }
        let entities = names.countsByName(counts)
        let liveObjects = counts.values.reduce(0, +)
        let modelHash = metadata[PersistentStoreCoordinator.modelHashKey]?.stringValue
        let modelVersion = names.history.flatMap { history in
            history.current.map {
                (number: history.versions.count, transaction: $0.transaction)
            }
        }
        if json {
            let members: [(String, JSONValue)] =
                [
                    ("store", .string(target)),
                    ("kind", .string("postgresql")),
                    ("serverVersion", .string(store.serverVersionText)),
                    ("transactions", .unsigned(transactions)),
                    ("liveObjects", .number(liveObjects)),
                ] + Self.modelMembers(entities, names, modelHash, modelVersion) + [
                    ("metadata", MetadataRendering.json(metadata))
                ]
            context.output.writeLine(JSONValue.object(members).rendered(pretty: true))
            return .success
        }
        let output = context.output
        func line(_ label: String, _ value: String) {
            output.writeLine(Formatting.rightPadded(label + ":", 17) + value)
        }
        line("store", target)
        line("server", "PostgreSQL \(store.serverVersionText)")
        line("transactions", "\(transactions) committed")
        line("live objects", String(liveObjects))
        if let modelHash { line("model hash", modelHash) }
        if let modelVersion {
            line(
                "model version",
                "\(modelVersion.number), since transaction \(modelVersion.transaction)"
            )
        }
        if let problem = names.schemaProblem { line("model", problem) }
        Self.write(entities, names, metadata, to: output)
        return .success
    }

    /// The entities with their counts and the metadata, as text, the same for a file and a
    /// database.
    private static func write(
        _ entities: [(name: String, count: Int)],
        _ names: EntityNames,
        _ metadata: Metadata,
        to output: TextOutput
    ) {
        output.writeLine("entities:")
        if entities.isEmpty { output.writeLine("  (none)") }
        // Subentities are indented under the entity they inherit from.
        let tree = names.hierarchy(entities)
        let width = (tree.map { $0.name.count + 2 * $0.depth }.max() ?? 0) + 2
        for entity in tree {
            let name = String(repeating: "  ", count: entity.depth) + entity.name
            output.writeLine(
                "  " + Formatting.rightPadded(name, width) + "\(entity.count)"
                    + (entity.isAbstract ? " (abstract)" : "")
            )
        }
        output.writeLine("metadata:")
        if metadata.isEmpty { output.writeLine("  (none)") }
        for key in metadata.keys.sorted() {
            let value = metadata[key]!
            output.writeLine(
                "  \(Formatting.singleLine(key)) (\(MetadataRendering.typeName(value))): "
                    + MetadataRendering.summary(value)
            )
        }
    }

    /// The JSON members that describe the stored model, the same for a file and a database:
    /// the entities' counts and hierarchy, and the model version that wrote the store last.
    private static func modelMembers(
        _ entities: [(name: String, count: Int)],
        _ names: EntityNames,
        _ modelHash: String?,
        _ modelVersion: (number: Int, transaction: UInt64)?
    ) -> [(String, JSONValue)] {
        [
            ("entities", .object(entities.map { ($0.name, .number($0.count)) })),
            (
                "superentities",
                .object(
                    entities.compactMap { entry in
                        names.entity(tag: names.tag(named: entry.name) ?? 0)?.superentity.map {
                            (entry.name, .string($0))
                        }
                    }
                )
            ),
            (
                "abstractEntities",
                .array(
                    entities.filter {
                        names.entity(tag: names.tag(named: $0.name) ?? 0)?.isAbstract == true
                    }.map { .string($0.name) }
                )
            ),
            ("modelHash", modelHash.map { .string($0) } ?? .null),
            ("modelVersion", modelVersion.map { .number($0.number) } ?? .null),
            ("modelVersionTransaction", modelVersion.map { .unsigned($0.transaction) } ?? .null),
        ]
    }
}
