import Foundation

/// The description of a model that the engine stores in the store's metadata.
///
/// It is everything a reader needs to decode object payloads without the model's classes: the
/// entities with their tags, and each entity's persistent properties in payload order. The
/// `objectlog` tool and ``StoreInspector`` read it; ``versionHash`` identifies it.
public struct ModelSchema: Codable, Sendable, Hashable {
    /// The version of this description's layout.
    public var schemaVersion: Int
    /// The entities, ordered by tag.
    public var entities: [Entity]

    /// Creates a schema.
    public init(schemaVersion: Int = 1, entities: [Entity]) {
        self.schemaVersion = schemaVersion
        self.entities = entities
    }

    /// One entity: its name, its tag in record frames, and its persistent properties.
    public struct Entity: Codable, Sendable, Hashable {
        /// The entity name.
        public var name: String
        /// The number that marks the entity's records in the log.
        public var tag: UInt32
        /// The persistent properties, in payload order.
        public var properties: [Property]
        /// Groups of attribute names whose values must be unique together.
        public var uniquenessConstraints: [[String]]
        /// The entity's name in an earlier model version, when it was renamed
        /// (``ManagedObject/originalEntityName``).
        public var originalName: String?
        /// The entity this one inherits from, if any; its properties come first in
        /// ``properties``.
        public var superentity: String?
        /// Whether the entity has objects of its subentities only.
        public var isAbstract: Bool
        /// The declared indexes (``ManagedObject/indexes`` and attributes declared
        /// ``AttributeOptions/indexed``), each a list of attribute names in sort order.
        public var indexes: [[String]] = []

        /// Creates an entity description.
        public init(
            name: String,
            tag: UInt32,
            properties: [Property],
            uniquenessConstraints: [[String]],
            originalName: String? = nil,
            superentity: String? = nil,
            isAbstract: Bool = false
        ) {
            self.name = name
            self.tag = tag
            self.properties = properties
            self.uniquenessConstraints = uniquenessConstraints
            self.originalName = originalName
            self.superentity = superentity
            self.isAbstract = isAbstract
        }

        private enum CodingKeys: String, CodingKey {
            case name, tag, properties, uniquenessConstraints, originalName, superentity
            case isAbstract, indexes
        }

        // Written by hand so that an entity outside any hierarchy is described, and hashed,
        // exactly as before hierarchies existed: `superentity`, `isAbstract` and `indexes`
        // appear only when set.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            tag = try container.decode(UInt32.self, forKey: .tag)
            properties = try container.decode([Property].self, forKey: .properties)
            uniquenessConstraints = try container.decode(
                [[String]].self,
                forKey: .uniquenessConstraints
            )
            originalName = try container.decodeIfPresent(String.self, forKey: .originalName)
            superentity = try container.decodeIfPresent(String.self, forKey: .superentity)
            isAbstract = try container.decodeIfPresent(Bool.self, forKey: .isAbstract) ?? false
            indexes = try container.decodeIfPresent([[String]].self, forKey: .indexes) ?? []
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(tag, forKey: .tag)
            try container.encode(properties, forKey: .properties)
            try container.encode(uniquenessConstraints, forKey: .uniquenessConstraints)
            try container.encodeIfPresent(originalName, forKey: .originalName)
            try container.encodeIfPresent(superentity, forKey: .superentity)
            if isAbstract { try container.encode(true, forKey: .isAbstract) }
            // Only when declared: a model without indexes keeps the hash it had before them.
            if !indexes.isEmpty { try container.encode(indexes, forKey: .indexes) }
        }

        /// The property with a name.
        public func property(named name: String) -> Property? {
            properties.first { $0.name == name }
        }
    }

    /// One persistent property: an attribute or a relationship.
    public struct Property: Codable, Sendable, Hashable {
        /// Attribute or relationship.
        public enum Kind: String, Codable, Sendable, Hashable {
            /// A value stored in the payload.
            case attribute
            /// Keys of related objects stored in the payload.
            case relationship
        }

        /// The property name.
        public var name: String
        /// Attribute or relationship.
        public var kind: Kind
        /// The attribute's value type (attributes only).
        public var type: AttributeType?
        /// Whether the value may be `nil` (a to-one relationship is always optional in payloads).
        public var isOptional: Bool
        /// Whether the attribute is unique on its own.
        public var isUnique: Bool
        /// Whether large values of a data attribute go to blob files.
        public var isExternal: Bool
        /// The destination entity name (relationships only).
        public var destination: String?
        /// The inverse relationship name on the destination, if any.
        public var inverse: String?
        /// Whether the relationship is to-many.
        public var isToMany: Bool
        /// Whether a to-many relationship keeps its order.
        public var isOrdered: Bool
        /// The delete rule (relationships only).
        public var deleteRule: DeleteRule?
        /// The least number of destinations a save accepts.
        public var minimumCount: Int
        /// The greatest number of destinations a save accepts.
        public var maximumCount: Int
        /// The property's name in an earlier model version, when it was renamed.
        public var originalName: String?
        /// Attributes: the encoding of the default value (lowercase hex), which objects written
        /// before the attribute existed take.
        public var defaultValue: String?

        /// Creates an attribute description.
        public static func attribute(
            _ name: String,
            type: AttributeType,
            isOptional: Bool = false,
            isUnique: Bool = false,
            isExternal: Bool = false,
            defaultValue: [UInt8]? = nil,
            originalName: String? = nil
        ) -> Property {
            Property(
                name: name,
                kind: .attribute,
                type: type,
                isOptional: isOptional,
                isUnique: isUnique,
                isExternal: isExternal,
                destination: nil,
                inverse: nil,
                isToMany: false,
                isOrdered: false,
                deleteRule: nil,
                minimumCount: 0,
                maximumCount: 1,
                originalName: originalName,
                defaultValue: defaultValue.map(Self.hex)
            )
        }

        /// Lowercase hexadecimal digits of `bytes`.
        static func hex(_ bytes: [UInt8]) -> String {
            let digits = Array("0123456789abcdef".utf8)
            var text: [UInt8] = []
            text.reserveCapacity(bytes.count * 2)
            for byte in bytes {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 15)])
            }
            return String(decoding: text, as: UTF8.self)
        }

        /// The bytes of ``defaultValue``, or nil if there is none or it is not hexadecimal.
        var defaultBytes: [UInt8]? {
            guard let text = defaultValue?.utf8, text.count % 2 == 0 else { return nil }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(text.count / 2)
            var high: UInt8?
            for character in text {
                let digit: UInt8
                switch character {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = character - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"):
                    digit = character - UInt8(ascii: "a") + 10
                default: return nil
                }
                if let first = high {
                    bytes.append(first << 4 | digit)
                    high = nil
                } else {
                    high = digit
                }
            }
            return bytes
        }
    }

    /// The entity with a name.
    public func entity(named name: String) -> Entity? {
        entities.first { $0.name == name }
    }

    /// The entity with a tag.
    public func entity(tag: UInt32) -> Entity? {
        entities.first { $0.tag == tag }
    }

    /// The names of the entities `name` inherits from, nearest first.
    public func superentities(of name: String) -> [String] {
        var chain: [String] = []
        var current = entity(named: name)?.superentity
        while let parent = current, !chain.contains(parent), parent != name {
            chain.append(parent)
            current = entity(named: parent)?.superentity
        }
        return chain
    }

    /// The entity `name` and every entity that inherits from it, directly or not, in tag order.
    public func family(of name: String) -> [Entity] {
        entities.filter { $0.name == name || superentities(of: $0.name).contains(name) }
    }

    /// A 16-hex-digit hash of the schema (FNV-1a, 64 bits, over its canonical JSON without the
    /// attributes' default values).
    ///
    /// Two schemas have the same hash exactly when they describe the same payloads and rules.
    /// Defaults are left out because they need not be constant (a `Date()` default is the
    /// time the model was built): the version that adds an attribute records the default that
    /// objects written before it take.
    public var versionHash: String {
        var hashed = self
        for entity in hashed.entities.indices {
            for property in hashed.entities[entity].properties.indices {
                hashed.entities[entity].properties[property].defaultValue = nil
            }
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in hashed.canonicalJSON() {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The schema as JSON with sorted keys, the form stored in metadata.
    public func canonicalJSON() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain strings, numbers and arrays cannot fail.
        return (try? encoder.encode(self)) ?? Data()
    }

    /// Decodes a schema from the JSON stored in metadata.
    /// - Throws: ``ObjectLogError/Code/corrupt`` if the JSON is not a schema, with the decoder's
    ///   error as ``ObjectLogError/underlyingError``.
    public static func decode(json: Data) throws(ObjectLogError) -> ModelSchema {
        do {
            return try JSONDecoder().decode(ModelSchema.self, from: json)
        } catch {
            throw ObjectLogError(
                .corrupt,
                "the stored model description is not readable: \(error)",
                underlyingError: error
            )
        }
    }

    /// Human-readable differences that take this schema (the store's) to `other` (the code's),
    /// one line per change (the ``SchemaChange/description`` of each of ``changes(to:)``).
    public func differences(to other: ModelSchema) -> [String] {
        changes(to: other).map(\.description)
    }

    /// The changes that take this schema (an older stored version) to `other` (a newer one),
    /// as the lightweight migration infers them: a renamed entity or property is one change.
    ///
    /// The two schemas' entity tags must continue each other, as those of two versions
    /// recorded in one store do.
    public func changes(to other: ModelSchema) -> [SchemaChange] {
        SchemaMapping(from: self, to: other).changes(from: self, to: other)
    }
}

extension ModelSchema.Property {
    /// A short description such as `string?` or `to-many Snapshot (cascade)`.
    public var summary: String {
        switch kind {
        case .attribute:
            var text = (type?.rawValue ?? "?") + (isOptional ? "?" : "")
            if isUnique { text += " unique" }
            if isExternal { text += " external" }
            return text
        case .relationship:
            var text = (isToMany ? (isOrdered ? "ordered to-many " : "to-many ") : "to-one ")
            text += destination ?? "?"
            text += " (\(deleteRule?.rawValue ?? "nullify")"
            if let inverse { text += ", inverse \(inverse)" }
            if minimumCount > 0 { text += ", min \(minimumCount)" }
            if maximumCount != .max, isToMany { text += ", max \(maximumCount)" }
            return text + ")"
        }
    }
}
