import CommandLineKit
import Foundation
import ReactionDiffusion

/// How the lab writes dates, parameters and configurations in text and JSON.
enum LabFormat {
    /// A date in ISO 8601 (UTC, seconds).
    static func date(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)
        )
    }

    /// `name=value` for each parameter the model reads.
    static func parameters(_ parameters: Parameters, model: Model?) -> String {
        let names = model?.parameterNames ?? Parameters.names
        return names.map { "\($0)=\(parameters.value(forName: $0)!)" }.joined(separator: " ")
    }

    /// The names of the parameters `configuration`'s model reads (all fifteen when the model
    /// is unknown to this version, so nothing stored is hidden).
    static func parameterNames(of configuration: Configuration) -> [String] {
        configuration.modelValue?.parameterNames ?? Parameters.names
    }

    /// A configuration as JSON: its settings, its model's parameters, notes and tags, and its
    /// snapshots' steps.
    static func json(_ configuration: Configuration, snapshots: Bool) -> JSONValue {
        let parameters = configuration.parameters
        var members: [(String, JSONValue)] = [
            ("name", .string(configuration.name)),
            ("model", .string(configuration.model)),
            ("preset", configuration.preset.map { .string($0) } ?? .null),
            ("width", .number(configuration.width)),
            ("height", .number(configuration.height)),
            ("precision", .string(configuration.precision)),
            ("boundary", .string(configuration.boundary)),
            ("steps", .number(configuration.latestSnapshot?.step ?? 0)),
            ("snapshotCount", .number(configuration.snapshots.count)),
            ("autoSaved", .bool(configuration.autoSaved)),
            ("created", .date(configuration.created)),
            ("modified", .date(configuration.modified)),
            (
                "parameters",
                .object(
                    parameterNames(of: configuration).map {
                        ($0, .float(parameters.value(forName: $0)!))
                    }
                )
            ),
            ("notes", .string(configuration.notes)),
            ("tags", .array(configuration.tags.map { .string($0) })),
        ]
        if snapshots {
            let sorted = configuration.snapshots.sorted { $0.step < $1.step }
            members.append(
                (
                    "snapshots",
                    .array(
                        sorted.map {
                            .object([
                                ("step", .number($0.step)),
                                ("timestamp", .date($0.savedAt)),
                                ("stateBytes", .number($0.state.count)),
                                ("unorm8Rule", .number($0.unorm8Rule)),
                                ("thumbnailBytes", .number($0.thumbnail?.count ?? 0)),
                            ])
                        }
                    )
                )
            )
        }
        return .object(members)
    }

    /// The lines of `rdlab list`: a header and one row per configuration.
    static func table(_ configurations: [Configuration]) -> [String] {
        let header = [
            "NAME", "MODEL", "PRESET", "GRID", "PRECISION", "STEPS", "SNAPSHOTS", "TAGS",
            "MODIFIED",
        ]
        let rows = configurations.map { configuration -> [String] in
            [
                configuration.name + (configuration.autoSaved ? " (last run)" : ""),
                configuration.model,
                configuration.preset ?? "-",
                "\(configuration.width)×\(configuration.height)",
                configuration.precision,
                String(configuration.latestSnapshot?.step ?? 0),
                String(configuration.snapshots.count),
                configuration.tags.isEmpty ? "-" : configuration.tags.joined(separator: ","),
                date(configuration.modified),
            ]
        }
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max()! }
        return all.map { row in
            row.enumerated().map { column, text in
                column == row.count - 1
                    ? text : text.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }
}
