import CommandLineKit
import ObjectLog
import ObjectLogStore

/// `objectlog verify PATH [--json]`: checks everything that can be checked, read-only.
struct VerifyCommand: StoreReportCommand {
    static let configuration = CommandConfiguration.storeReport(
        name: "verify",
        abstract: "Check a store's header, every checksum, the commit structure, the index, the "
            + "external blobs and the references between objects.",
        discussion: """
            Exits 0 when the store is clean and 65 when anything is wrong, printing each problem \
            on its own line with the byte offset concerned. A torn tail (an incomplete last \
            transaction, as an interrupted save leaves, in a store nobody is writing) is \
            reported as 'torn tail', apart from corruption (damage followed by committed \
            transactions, or in a transaction the index checkpoint covers); a save another \
            process has in flight is not a problem. With the model the engine \
            stores in the metadata, every object is decoded and every relationship target must \
            be a live object of the destination entity. The store is not changed.
            """,
        jsonHelp: "Print one JSON object instead of text."
    )

    /// One thing wrong with the store.
    struct Finding {
        /// `torn tail`, `corruption`, `index`, `blob`, `schema`, `payload` or `reference`.
        var kind: String
        /// The file concerned when it is not the store itself (the index or a blob).
        var file: String?
        /// The byte offset in the file concerned, where there is one.
        var offset: UInt64?
        /// What is wrong.
        var message: String

        /// One line: kind, file, offset, what is wrong.
        var line: String {
            var text = kind
            if let file { text += " \(file)" }
            if let offset { text += " at offset \(offset)" }
            return text + ": " + Formatting.singleLine(message)
        }

        var json: JSONValue {
            .object([
                ("kind", .string(kind)),
                ("offset", offset.map { .unsigned($0) } ?? .null),
                ("file", file.map { .string($0) } ?? .null),
                ("message", .string(message)),
            ])
        }
    }

    var path: String
    var json: Bool

    func run(_ context: CommandContext) throws -> ExitCode {
        let inspection = try StoreAccess.inspect(path, checkBlobs: true)
        var findings = inspection.problems.map(Self.finding)
        let names = EntityNames(path: path, metadata: inspection.metadata)
        var checkedReferences = 0
        if let problem = names.schemaProblem {
            findings.append(Finding(kind: "schema", file: nil, offset: nil, message: problem))
        } else if names.schema != nil {
            // Whatever goes wrong reading the objects is a finding: the report is always
            // printed.
            do {
                checkedReferences = try checkObjects(names: names, findings: &findings)
            } catch {
                let failure = CommandError.from(error)
                findings.append(
                    Finding(
                        kind: "payload",
                        file: nil,
                        offset: (error as? StoreError)?.offset,
                        message: "the objects cannot be read: " + failure.message
                    )
                )
            }
        }
        let transactions = inspection.transactions.filter { !$0.isCompaction }.count
        // The records that hold the stored model versions are not objects.
        let liveObjects = inspection.liveObjects.values.filter {
            $0.entity != ModelHistory.schemaEntityTag
        }.count

        if json {
            let value = JSONValue.object([
                ("path", .string(path)),
                ("clean", .bool(findings.isEmpty)),
                ("transactions", .number(transactions)),
                ("liveObjects", .number(liveObjects)),
                ("references", .number(checkedReferences)),
                ("validBytes", .unsigned(inspection.validBytes)),
                ("fileBytes", .unsigned(inspection.fileBytes)),
                ("blobCount", .number(inspection.blobCount)),
                ("indexStatus", .string(inspection.indexStatus.rawValue)),
                ("problems", .array(findings.map(\.json))),
            ])
            context.output.writeLine(value.rendered(pretty: true))
        } else {
            for finding in findings { context.output.writeLine(finding.line) }
            var summary =
                "\(transactions) transaction(s), \(liveObjects) live object(s), "
                + "\(inspection.referencedBlobs.count) referenced blob(s), "
            if names.schema != nil { summary += "\(checkedReferences) reference(s), " }
            summary += "index " + inspection.indexStatus.rawValue
            context.output.writeLine(
                (findings.isEmpty ? "ok: " : "damaged: ") + "\(path): \(summary)"
            )
        }
        guard findings.isEmpty else {
            let kinds = Set(findings.map(\.kind)).sorted().joined(separator: ", ")
            throw CommandError(
                "\(path): \(findings.count) problem(s) found (\(kinds))",
                exitCode: .dataError
            )
        }
        return .success
    }

    /// Decodes every live object by the stored schema and checks that every relationship
    /// target is a live object of the destination entity.
    ///
    /// The store is opened read-only with salvage and without the index checkpoint, so a
    /// damaged store's intact transactions are checked too, and only records the scan checked
    /// are read.
    ///
    /// - Returns: The number of references checked.
    private func checkObjects(names: EntityNames, findings: inout [Finding]) throws -> Int {
        guard let schema = names.schema else { return 0 }
        let store = try StoreAccess.openSalvaging(path)
        defer { try? store.close() }
        // Records of earlier model versions are checked in the current layout.
        _ = EntityNames(store: store)

        var objectFindings: [Finding] = []
        var references = 0
        // Every object's relationship values, for the inverse check after the scan.
        var relationships:
            [ObjectKey: (entity: ModelSchema.Entity, values: [String: StoredValue])] =
                [:]
        try store.forEachLiveObject(entity: nil) { key, tag, payload in
            // The records that hold the stored model versions are not objects.
            if tag == ModelHistory.schemaEntityTag { return }
            let offset = store.location(of: key)?.offset
            guard let entity = schema.entity(tag: tag) else {
                objectFindings.append(
                    Finding(
                        kind: "payload",
                        file: nil,
                        offset: offset,
                        message: "object #\(key) has entity tag \(tag), which the stored model "
                            + "does not describe"
                    )
                )
                return
            }
            let values: [(name: String, value: StoredValue)]
            do {
                values = try StoreInspector.decode(payload: payload, entity: entity)
            } catch {
                objectFindings.append(
                    Finding(
                        kind: "payload",
                        file: nil,
                        offset: offset,
                        message: "object #\(key) (\(entity.name)) cannot be decoded: "
                            + ((error as? ObjectLogError)?.message ?? String(describing: error))
                    )
                )
                return
            }
            var relationshipValues: [String: StoredValue] = [:]
            for (name, value) in values {
                if case .toOne = value { relationshipValues[name] = value }
                if case .toMany = value { relationshipValues[name] = value }
                let targets: [ObjectKey]
                switch value {
                case .toOne(let target?): targets = [target]
                case .toMany(let keys): targets = keys
                default: continue
                }
                let destination = entity.property(named: name)?.destination
                let destinationTag = destination.flatMap { schema.entity(named: $0)?.tag }
                for target in targets {
                    references += 1
                    guard let location = store.location(of: target) else {
                        objectFindings.append(
                            Finding(
                                kind: "reference",
                                file: nil,
                                offset: offset,
                                message: "object #\(key) (\(entity.name)).\(name) refers to "
                                    + "#\(target), which is not a live object"
                            )
                        )
                        continue
                    }
                    if let destinationTag, location.entity != destinationTag {
                        objectFindings.append(
                            Finding(
                                kind: "reference",
                                file: nil,
                                offset: offset,
                                message: "object #\(key) (\(entity.name)).\(name) refers to "
                                    + "#\(target), a \(names.name(of: location.entity)), not a "
                                    + (destination ?? "?")
                            )
                        )
                    }
                }
            }
            relationships[key] = (entity, relationshipValues)
        }
        objectFindings.append(contentsOf: inverseFindings(relationships, store: store))
        findings.append(contentsOf: objectFindings.sorted { ($0.offset ?? 0) < ($1.offset ?? 0) })
        return references
    }

    /// Checks that each relationship with an inverse is matched by the inverse on its target:
    /// if a sample's `group` is #1, #1's `samples` must include the sample.
    ///
    /// Targets that are not live were already reported; they are skipped here.
    private func inverseFindings(
        _ relationships: [ObjectKey: (entity: ModelSchema.Entity, values: [String: StoredValue])],
        store: LogStore
    ) -> [Finding] {
        var findings: [Finding] = []
        for key in relationships.keys.sorted() {
            let (entity, values) = relationships[key]!
            for property in entity.properties where property.kind == .relationship {
                guard let inverse = property.inverse, let value = values[property.name] else {
                    continue
                }
                let targets: [ObjectKey]
                switch value {
                case .toOne(let target?): targets = [target]
                case .toMany(let keys): targets = keys
                default: continue
                }
                for target in targets {
                    guard let (targetEntity, targetValues) = relationships[target],
                        targetEntity.name == property.destination
                    else { continue }
                    let matches: Bool
                    switch targetValues[inverse] {
                    case .toOne(let back)?: matches = back == key
                    case .toMany(let back)?: matches = back.contains(key)
                    default: matches = false
                    }
                    guard !matches else { continue }
                    findings.append(
                        Finding(
                            kind: "reference",
                            file: nil,
                            offset: store.location(of: key)?.offset,
                            message: "object #\(key) (\(entity.name)).\(property.name) refers to "
                                + "#\(target), but #\(target).\(inverse) does not refer back to "
                                + "#\(key)"
                        )
                    )
                }
            }
        }
        return findings
    }

    /// The store layer's problem as a finding.
    private static func finding(_ problem: StoreInspection.Problem) -> Finding {
        switch problem.area {
        case .tornTail:
            Finding(kind: "torn tail", file: nil, offset: problem.offset, message: problem.message)
        case .log, .header:
            Finding(kind: "corruption", file: nil, offset: problem.offset, message: problem.message)
        case .index:
            Finding(
                kind: "index",
                file: problem.path,
                offset: problem.offset,
                message: problem.message
            )
        case .blob:
            Finding(
                kind: "blob",
                file: problem.path,
                offset: problem.offset,
                message: problem.message
            )
        }
    }
}
