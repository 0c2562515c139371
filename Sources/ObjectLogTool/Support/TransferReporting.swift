import CommandLineKit
import ObjectLogPostgreSQL

/// What `export` and `import` print when they have copied a store.
enum TransferReporting {
    /// Prints `report` of a copy from `source` to `destination` (a path, or a database as its
    /// target, never with a password): as text, or as one JSON object.
    static func print(
        _ report: StoreTransfer.Report,
        verb: String,
        from source: String,
        to destination: String,
        json: Bool,
        output: TextOutput
    ) {
        if json {
            let value = JSONValue.object([
                ("source", .string(source)),
                ("destination", .string(destination)),
                ("objects", .number(report.objects)),
                ("modelVersions", .number(report.modelVersions)),
                ("blobs", .number(report.blobs)),
                ("blobBytes", .unsigned(report.blobBytes)),
                ("metadataKeys", .number(report.metadataKeys)),
                ("transaction", .unsigned(report.transaction)),
            ])
            output.writeLine(value.rendered(pretty: true))
            return
        }
        func line(_ label: String, _ value: String) {
            output.writeLine(Formatting.field(label, value))
        }
        output.writeLine("\(verb) \(source) to \(destination)")
        line("live objects", String(report.objects))
        line("versions", String(report.modelVersions))
        line("blobs", "\(report.blobs) (\(Formatting.bytes(report.blobBytes)))")
        line("metadata keys", String(report.metadataKeys))
    }
}
