import ObjectLog
import ObjectLogStore

/// `objectlog schema PATH [--json]`: the model versions that wrote a store, oldest first.
struct SchemaCommand: StoreReportCommand {
    static let configuration = CommandConfiguration.storeReport(
        name: "schema",
        abstract: "List the model versions that wrote the store: their hashes, the transaction "
            + "that introduced each, their entities and what changed from one to the next.",
        discussion: """
            Each version is stored once, in the store itself; the last one listed is the \
            version that wrote the store last (objects written by earlier versions are read \
            in its layout). The store is not changed. Exit 1 if the store records no model.
            """,
        jsonHelp: "Print one JSON object instead of text."
    )

    var path: String
    var json: Bool

    func run(_ context: CommandContext) throws -> ExitCode {
        let store = try StoreAccess.openReadOnly(path)
        defer { try? store.close() }
        guard let history = try ModelHistory.read(from: store) else {
            throw ToolError(.failure, "\(path): the store records no ObjectLog model")
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
}
