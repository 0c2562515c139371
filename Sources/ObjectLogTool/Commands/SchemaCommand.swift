import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogStore

/// `objectlog schema PATH [--json] [--check-model MODEL [--removing NAMES]]`: the model
/// versions that wrote a store, oldest first, or what opening it with another model would do.
struct SchemaCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "schema",
        abstract: "List the model versions that wrote the store: their hashes, the transaction "
            + "that introduced each, their entities and what changed from one to the next.",
        discussion: """
            Each version is stored once, in the store itself; the last one listed is the \
            version that wrote the store last (objects written by earlier versions are read \
            in its layout). A renamed entity or property is listed as a rename: its values \
            are kept. The store is not changed. Exit 1 if the store records no model.

            With --check-model, says instead what opening the store with another model would \
            do, as an app's open decides it: each change a migration would make and the \
            stored objects it touches, or why the open would be refused (a store written by \
            a newer version of the model, a change that cannot be inferred, a removal of \
            stored data that the model does not declare). MODEL is a store that records the \
            model (one a newer build of the app wrote, say) or a model description in JSON \
            (as a store records it, ModelSchema's canonical JSON). New uniqueness \
            constraints are listed, not checked: the app's open checks them. Nothing is \
            written. Exit 0 if the open would succeed, 1 if it would be refused.
            """,
        usage: "<path> [--json] [--check-model <model> [--removing <names>]]",
        arguments: [ArgumentDefinition(name: "path", help: "The store file.")],
        options: [
            .flag("--json", help: "Print one JSON object instead of text."),
            .option(
                "--check-model",
                value: "model",
                help: "A store or JSON model description to check the store against."
            ),
            .option(
                "--removing",
                value: "names",
                help: "With --check-model: the removals the model declares, comma-separated "
                    + "(Scrap,Note.obsolete)."
            ),
        ]
    )

    var path: String
    var json: Bool
    var checkModel: String?
    var removals: [String]

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        path = arguments.positionals[0]
        json = arguments.flag("--json")
        checkModel = arguments.value("--check-model")
        removals =
            arguments.value("--removing").map { list in
                list.split(separator: ",").map { String($0) }
            } ?? []
        if checkModel == nil, arguments.value("--removing") != nil {
            throw CommandError.usage("--removing needs --check-model", command: context.commandName)
        }
        if checkModel?.isEmpty == true {
            throw CommandError.usage("the model path is empty", command: context.commandName)
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        if let checkModel { return try check(against: checkModel, context) }
        let store = try StoreAccess.openReadOnly(path)
        defer { try? store.close() }
        guard let history = try ModelHistory.read(from: store) else {
            throw CommandError("\(path): the store records no ObjectLog model", exitCode: .failure)
        }
        let versions = history.versions
        if json {
            let items = versions.enumerated().map { index, version in
                JSONValue.object([
                    ("version", .number(index + 1)),
                    ("hash", .string(version.hash)),
                    ("transaction", .unsigned(version.transaction)),
                    ("current", .bool(index == versions.count - 1)),
                    ("changes", .array(Self.changes(versions, at: index).map { .string($0) })),
                    ("entities", .array(version.schema.entities.map(Self.json))),
                ])
            }
            let value = JSONValue.object([
                ("path", .string(path)),
                ("current", .string(versions.last?.hash ?? "")),
                ("versions", .array(items)),
            ])
            context.output.writeLine(value.rendered(pretty: true))
            return .success
        }
        let output = context.output
        for (index, version) in versions.enumerated() {
            let current = index == versions.count - 1 ? ", current" : ""
            output.writeLine(
                "version \(index + 1): \(version.hash) (transaction \(version.transaction)\(current))"
            )
            let changes = Self.changes(versions, at: index)
            for change in changes { output.writeLine("  " + change) }
            if index == 0 || index == versions.count - 1 {
                for entity in version.schema.entities {
                    let properties = entity.properties.map { "\($0.name): \($0.summary)" }
                    var kind = "tag \(entity.tag)"
                    if let parent = entity.superentity { kind += ", inherits \(parent)" }
                    if entity.isAbstract { kind += ", abstract" }
                    output.writeLine(
                        "  \(entity.name) (\(kind)): " + properties.joined(separator: ", ")
                    )
                }
            }
        }
        return .success
    }

    /// What changed from the version before `index` to it, one line each.
    private static func changes(_ versions: [ModelHistory.Version], at index: Int) -> [String] {
        guard index > 0 else { return ["first version"] }
        let lines = versions[index - 1].schema.differences(to: versions[index].schema)
        return lines.isEmpty ? ["(no change to the stored layout)"] : lines
    }

    private static func json(_ entity: ModelSchema.Entity) -> JSONValue {
        .object([
            ("name", .string(entity.name)),
            ("tag", .unsigned(UInt64(entity.tag))),
            ("originalName", entity.originalName.map { .string($0) } ?? .null),
            ("superentity", entity.superentity.map { .string($0) } ?? .null),
            ("isAbstract", .bool(entity.isAbstract)),
            (
                "properties",
                .array(
                    entity.properties.map { property in
                        .object([
                            ("name", .string(property.name)),
                            ("summary", .string(property.summary)),
                            ("originalName", property.originalName.map { .string($0) } ?? .null),
                        ])
                    }
                )
            ),
            (
                "uniquenessConstraints",
                .array(
                    entity.uniquenessConstraints.map { group in
                        .array(group.map { .string($0) })
                    }
                )
            ),
        ])
    }

    // MARK: - --check-model

    /// Prints what opening the store with the model in `modelPath` would do.
    private func check(against modelPath: String, _ context: CommandContext) throws -> ExitCode {
        // The store is read first, so that a path that is no store fails as it does without
        // --check-model.
        try StoreAccess.openReadOnly(path).close()
        let schema = try Self.readModel(modelPath)
        let preview: MigrationPreview
        do {
            preview = try PersistentContainer.migrationPreview(
                at: path,
                schema: schema,
                removing: removals
            )
        } catch {
            // A declared removal of something the model has is a mistake on the command line.
            guard error.code == .invalidModel else { throw error }
            throw CommandError.usage(error.message, command: context.commandName)
        }
        if json {
            let value = JSONValue.object([
                ("path", .string(path)),
                ("model", .string(modelPath)),
                ("outcome", .string(preview.outcome.rawValue)),
                ("storeVersion", preview.storeVersion.map { .string($0) } ?? .null),
                ("modelVersion", .string(preview.modelVersion)),
                ("storeIsNewer", .bool(preview.storeIsNewer)),
                ("changes", .array(preview.changes.map(Self.json))),
                ("refusals", .array(preview.refusals.map { .string($0) })),
            ])
            context.output.writeLine(value.rendered(pretty: true))
        } else {
            context.output.writeLine(preview.description)
        }
        return preview.outcome == .refused ? .failure : .success
    }

    /// The current model of a store, or a model description in JSON.
    private static func readModel(_ path: String) throws -> ModelSchema {
        guard FileStatus.exists(path) else {
            throw CommandError("\(path): no such model file or store", exitCode: .noInput)
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CommandError("\(path): cannot read the model", exitCode: .ioError)
        }
        let first = try? handle.read(upToCount: 1)
        try? handle.close()
        // A store begins with its magic number; a model description is a JSON object.
        if first?.first == UInt8(ascii: "{") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CommandError("\(path): cannot read the model", exitCode: .ioError)
            }
            do {
                return try ModelSchema.decode(json: data)
            } catch {
                throw CommandError(
                    "\(path): not a model description: \(error.message)",
                    exitCode: .dataError
                )
            }
        }
        let store = try StoreAccess.openReadOnly(path)
        defer { try? store.close() }
        guard let current = try ModelHistory.read(from: store)?.current else {
            throw CommandError(
                "\(path): the store records no ObjectLog model to check with",
                exitCode: .failure
            )
        }
        return current.schema
    }

    private static func json(_ change: SchemaChange) -> JSONValue {
        .object([
            ("kind", .string(change.kind.rawValue)),
            ("entity", .string(change.entity)),
            ("property", change.property.map { .string($0) } ?? .null),
            ("detail", .string(change.detail)),
            ("affectedObjects", change.affectedObjects.map { .number($0) } ?? .null),
            ("declared", .bool(change.isDeclared)),
            ("dropsStoredData", .bool(change.dropsStoredData)),
            ("line", .string(change.description)),
        ])
    }
}
