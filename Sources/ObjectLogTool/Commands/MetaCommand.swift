import CommandLineKit
import ObjectLog
import ObjectLogStore

/// `objectlog meta PATH [get KEY | set KEY VALUE [--type T] | delete KEY]`: the store's
/// metadata dictionary.
struct MetaCommand: ToolCommand {
    /// Keys with this prefix belong to the ObjectLog engine (its model schema and hash).
    static let reservedKeyPrefix = PersistentStoreCoordinator.reservedKeyPrefix

    static let configuration = CommandConfiguration(
        name: "meta",
        abstract: "Print, get, set or delete entries of a store's metadata dictionary.",
        discussion: """
            With only <path>, prints every entry as 'key (type): value'. 'get' prints one value \
            in full (exit 1 if the key is absent). 'set' and 'delete' commit a transaction whose \
            metadata is the current dictionary with the change; they refuse a store another \
            process has open for writing. Keys starting with 'ObjectLog.' are reserved for the \
            engine and cannot be set or deleted.
              objectlog meta PATH
              objectlog meta PATH get KEY
              objectlog meta PATH set KEY VALUE [--type string|int|double|bool]
              objectlog meta PATH delete KEY
            """,
        usage: "<path> [get <key> | set <key> <value> [--type <type>] | delete <key>] [--json]",
        arguments: [
            ArgumentDefinition(name: "path", help: "The store file."),
            ArgumentDefinition(
                name: "action",
                help: "get, set or delete (print everything when left out).",
                isOptional: true
            ),
            ArgumentDefinition(name: "key", help: "The metadata key.", isOptional: true),
            ArgumentDefinition(name: "value", help: "The new value (set only).", isOptional: true),
        ],
        options: [
            .option(
                "--type",
                value: "type",
                help: "The type of the value for set (default: string).",
                allowedValues: ["string", "int", "double", "bool"]
            ),
            .flag("--json", help: "Print the dictionary (or the value) as JSON."),
        ]
    )

    enum Action {
        case print
        case get(String)
        case set(String, MetadataValue)
        case delete(String)
    }

    var path: String
    var action: Action
    var json: Bool

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        let command = context.commandName
        let positionals = arguments.positionals
        path = positionals[0]
        json = arguments.flag("--json")
        let type = arguments.value("--type")
        func expect(_ count: Int, _ form: String) throws(CommandError) {
            if positionals.count < count {
                throw CommandError.usage("'\(positionals[1])' needs \(form)", command: command)
            }
            if positionals.count > count {
                throw CommandError.usage(
                    "unexpected argument '\(positionals[count])'",
                    command: command
                )
            }
        }
        guard positionals.count > 1 else {
            if type != nil {
                throw CommandError.usage("--type applies only to 'set'", command: command)
            }
            action = .print
            return
        }
        switch positionals[1] {
        case "get":
            try expect(3, "a <key>")
            action = .get(positionals[2])
        case "set":
            try expect(4, "a <key> and a <value>")
            let key = positionals[2]
            try Self.checkNotReserved(key, verb: "set")
            action = .set(
                key,
                try Self.parse(positionals[3], type: type ?? "string", command: command)
            )
        case "delete":
            try expect(3, "a <key>")
            try Self.checkNotReserved(positionals[2], verb: "delete")
            action = .delete(positionals[2])
        default:
            throw CommandError.usage(
                "unknown meta action '\(positionals[1])' (expected get, set or delete)",
                command: command
            )
        }
        if type != nil, case .set = action {
        } else if type != nil {
            throw CommandError.usage("--type applies only to 'set'", command: command)
        }
    }

    private static func checkNotReserved(_ key: String, verb: String) throws(CommandError) {
        guard !key.hasPrefix(reservedKeyPrefix) else {
            throw CommandError(
                "cannot \(verb) '\(Formatting.singleLine(key))': keys starting with "
                    + "'\(reservedKeyPrefix)' are reserved for the ObjectLog engine (its model "
                    + "schema); they change only when an app opens the store with a new model",
                exitCode: .usage
            )
        }
        guard !key.isEmpty else {
            throw CommandError("the metadata key is empty", exitCode: .usage)
        }
    }

    /// The typed value of `text`, or a usage error naming what was expected.
    static func parse(
        _ text: String,
        type: String,
        command: String
    ) throws(CommandError) -> MetadataValue {
        switch type {
        case "int":
            guard let value = Int64(text) else {
                throw CommandError.usage(
                    "'\(text)' is not an integer (--type int takes a whole number from "
                        + "\(Int64.min) to \(Int64.max))",
                    command: command
                )
            }
            return .integer(value)
        case "double":
            guard let value = Double(text), value.isFinite else {
                throw CommandError.usage(
                    "'\(text)' is not a finite number (--type double)",
                    command: command
                )
            }
            return .double(value)
        case "bool":
            switch text.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default:
                throw CommandError.usage(
                    "'\(text)' is not a Boolean (--type bool takes true or false)",
                    command: command
                )
            }
        default:
            return .string(text)
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        switch action {
        case .print:
            let (metadata, damage) = try readMetadata()
            if json {
                context.output.writeLine(MetadataRendering.json(metadata).rendered(pretty: true))
            } else {
                for key in metadata.keys.sorted() {
                    let value = metadata[key]!
                    context.output.writeLine(
                        "\(Formatting.singleLine(key)) (\(MetadataRendering.typeName(value))): "
                            + MetadataRendering.summary(value)
                    )
                }
            }
            return try DamageRendering.finish(damage, path: path, context: context)
        case .get(let key):
            let (metadata, damage) = try readMetadata()
            guard let value = metadata[key] else {
                _ = try DamageRendering.finish(damage, path: path, context: context)
                throw CommandError(
                    "\(path): no metadata key '\(Formatting.singleLine(key))'",
                    exitCode: .failure
                )
            }
            context.output.writeLine(
                json ? MetadataRendering.json(value).rendered() : MetadataRendering.fullText(value)
            )
            return try DamageRendering.finish(damage, path: path, context: context)
        case .set(let key, let value):
            try change(context) { metadata in
                metadata[key] = value
                return true
            }
            context.output.writeLine(
                "set \(Formatting.singleLine(key)) (\(MetadataRendering.typeName(value))) = "
                    + MetadataRendering.summary(value)
            )
            return .success
        case .delete(let key):
            let found = try change(context) { metadata in
                metadata.removeValue(forKey: key) != nil
            }
            guard found else {
                throw CommandError(
                    "\(path): no metadata key '\(Formatting.singleLine(key))'",
                    exitCode: .failure
                )
            }
            context.output.writeLine("deleted \(Formatting.singleLine(key))")
            return .success
        }
    }

    /// The metadata, read-only with salvage as every read command sees it, and the damage
    /// found (which the caller reports after printing).
    private func readMetadata() throws -> (Metadata, StoreDamage?) {
        let store = try StoreAccess.openSalvaging(path)
        defer { try? store.close() }
        return (store.metadata, store.damageAtOpen)
    }

    /// Applies `edit` to the metadata and commits the result if `edit` returns true.
    ///
    /// - Returns: What `edit` returned.
    @discardableResult
    private func change(
        _ context: CommandContext,
        _ edit: (inout Metadata) -> Bool
    ) throws -> Bool {
        let store = try StoreAccess.openForWriting(path)
        do {
            var metadata = store.metadata
            guard edit(&metadata) else {
                try store.close()
                return false
            }
            var transaction = Transaction()
            transaction.metadata = metadata
            try store.commit(transaction)
            try store.close()
            return true
        } catch {
            try? store.close()
            throw error
        }
    }
}
