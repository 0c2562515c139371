import Foundation

/// A text search on a string attribute, optionally ignoring case and diacritics: Core Data's
/// `CONTAINS[cd]`, `BEGINSWITH[cd]` and `==[cd]`.
///
/// Foundation's `#Predicate` on Linux has no `localizedStandardContains` and refuses
/// `lowercased()`, so it cannot say "contains, ignoring case". Give the search to the fetch
/// request instead; it is combined with the request's predicate by "and":
///
/// ```swift
/// var request = FetchRequest<Recipe>(predicate: #Predicate { $0.servings >= 2 })
/// request.textMatch = .contains(\.title, "creme", options: [.caseInsensitive, .diacriticInsensitive])
/// let recipes = try context.fetch(request)  // "Crème brûlée", "CREME caramel", …
/// ```
///
/// It works in fetches, ``ManagedObjectContext/count(_:)`` and
/// ``ManagedObjectContext/fetchIdentifiers(_:)``, on saved objects and on the context's
/// unsaved changes. The search runs on the stored bytes of the attribute alone: a record
/// that does not match is not decoded, and when both the attribute's value and the searched
/// text are ASCII the comparison is a byte loop with ASCII case folding. Other text is
/// compared by Foundation (`range(of:options:)` with `.caseInsensitive` and
/// `.diacriticInsensitive`), so "É" matches "e" when diacritics are ignored.
///
/// A `#Predicate` that is one case-sensitive `contains` or `starts(with:)` of a constant on a
/// string attribute (`#Predicate { $0.title.contains("creme") }`) runs the same way, with the
/// predicate's own comparison: character by character, as Foundation evaluates it.
///
/// Searches combine with each other, and with predicates, by `||`, `&&` and `!` (or
/// ``any(_:)`` and ``all(_:)``), and search optional strings too (`nil` never matches); the
/// whole is and-ed with the request's predicate:
///
/// ```swift
/// request.textMatch = .contains(\.title, "spot") || .contains(\.notes, "spot")
///     || .matching(#Predicate { $0.isFavorite })
/// ```
///
/// One search of a `String` runs on the stored bytes as described here; a combination, or a
/// search of an optional string, decodes each record the scan reads and tests the object.
///
/// Combined with a predicate on scalar attributes (`servings >= 2` above), the search reads
/// only the records the attribute columns let through: those whose saved values satisfy the
/// predicate, and the objects registered in the context. Otherwise it reads every record of
/// the entity.
public struct TextMatch<Root: ManagedObject> {
    /// How text is compared (``TextMatchOptions``).
    public typealias Options = TextMatchOptions

    /// One search of one attribute.
    struct Leaf {
        /// The attribute searched: a `String` or an optional `String`.
        let keyPath: PartialKeyPath<Root>
        /// What is searched for.
        let text: String
        let kind: TextMatchKind
        let options: Options
    }

    /// The searches and how they combine.
    indirect enum Node {
        case leaf(Leaf)
        case all([Node])
        case any([Node])
        case not(Node)
        case predicate(Predicate<Root>)
    }

    let node: Node

    private static func leaf(
        _ keyPath: PartialKeyPath<Root>,
        _ text: String,
        _ kind: TextMatchKind,
        _ options: Options
    ) -> TextMatch {
        TextMatch(node: .leaf(Leaf(keyPath: keyPath, text: text, kind: kind, options: options)))
    }

    /// Objects whose attribute contains `text` somewhere (every value contains "").
    /// - Parameters:
    ///   - keyPath: A `String` attribute of the entity.
    ///   - text: The text to find.
    ///   - options: How to compare; case-insensitive unless you say otherwise.
    /// - Returns: The search, for ``FetchRequest/textMatch``.
    public static func contains(
        _ keyPath: KeyPath<Root, String>,
        _ text: String,
        options: Options = .caseInsensitive
    ) -> TextMatch {
        leaf(keyPath, text, .contains, options)
    }

    /// Objects whose attribute starts with `text`.
    /// - Parameters:
    ///   - keyPath: A `String` attribute of the entity.
    ///   - text: The prefix.
    ///   - options: How to compare; case-insensitive unless you say otherwise.
    /// - Returns: The search, for ``FetchRequest/textMatch``.
    public static func hasPrefix(
        _ keyPath: KeyPath<Root, String>,
        _ text: String,
        options: Options = .caseInsensitive
    ) -> TextMatch {
        leaf(keyPath, text, .prefix, options)
    }

    /// Objects whose attribute equals `text` under `options`.
    /// - Parameters:
    ///   - keyPath: A `String` attribute of the entity.
    ///   - text: The value.
    ///   - options: How to compare; case-insensitive unless you say otherwise.
    /// - Returns: The search, for ``FetchRequest/textMatch``.
    public static func equals(
        _ keyPath: KeyPath<Root, String>,
        _ text: String,
        options: Options = .caseInsensitive
    ) -> TextMatch {
        leaf(keyPath, text, .equals, options)
    }

    /// Objects whose optional attribute has a value that contains `text` (`nil` never
    /// matches).
    /// - Parameters:
    ///   - keyPath: An optional `String` attribute of the entity.
    ///   - text: The text to find.
    ///   - options: How to compare; case-insensitive unless you say otherwise.
    /// - Returns: The search, for ``FetchRequest/textMatch``.
    public static func contains(
        _ keyPath: KeyPath<Root, String?>,
        _ text: String,
        options: Options = .caseInsensitive
    ) -> TextMatch {
        leaf(keyPath, text, .contains, options)
    }

    /// Objects whose optional attribute has a value that starts with `text` (`nil` never
    /// matches).
    /// - Parameters:
    ///   - keyPath: An optional `String` attribute of the entity.
    ///   - text: The prefix.
    ///   - options: How to compare; case-insensitive unless you say otherwise.
    /// - Returns: The search, for ``FetchRequest/textMatch``.
    public static func hasPrefix(
        _ keyPath: KeyPath<Root, String?>,
        _ text: String,
        options: Options = .caseInsensitive
    ) -> TextMatch {
        leaf(keyPath, text, .prefix, options)
    }

    /// Objects whose optional attribute has a value equal to `text` under `options` (`nil`
    /// never matches).
    /// - Parameters:
    ///   - keyPath: An optional `String` attribute of the entity.
    ///   - text: The value.
    ///   - options: How to compare; case-insensitive unless you say otherwise.
    /// - Returns: The search, for ``FetchRequest/textMatch``.
    public static func equals(
        _ keyPath: KeyPath<Root, String?>,
        _ text: String,
        options: Options = .caseInsensitive
    ) -> TextMatch {
        leaf(keyPath, text, .equals, options)
    }

    /// The search compiled for an entity's records, when it is one search of a `String`
    /// attribute: the accessor it reads and the matcher, which a scan runs on the stored
    /// bytes; nil otherwise (see ``condition(for:)``).
    func compile(for entity: EntityDescription) -> CompiledTextMatch? {
        guard case .leaf(let leaf) = node,
            let accessor = entity.attributeAccessor(for: leaf.keyPath)
                as? NativeAttributeAccessor<String>
        else { return nil }
        return CompiledTextMatch(
            accessor: accessor,
            matcher: TextMatcher(text: leaf.text, kind: leaf.kind, options: leaf.options),
            entity: entity
        )
    }
}

/// How a ``TextMatch`` compares text.
public struct TextMatchOptions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public var rawValue: UInt8
    /// Creates options from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Upper and lower case letters are equal ("Spot" matches "spot"): Core Data's `[c]`.
    public static let caseInsensitive = TextMatchOptions(rawValue: 1)
    /// Letters with and without diacritics are equal ("crème" matches "creme"): Core Data's
    /// `[d]`.
    public static let diacriticInsensitive = TextMatchOptions(rawValue: 2)
}

/// Where in the value a ``TextMatch``'s text must be.
enum TextMatchKind: Sendable {
    case contains, prefix, equals
}

/// A ``TextMatch`` bound to an entity's attribute.
struct CompiledTextMatch {
    let accessor: NativeAttributeAccessor<String>
    let matcher: TextMatcher
    /// The number of properties that starts each of the entity's encodings.
    let propertyCount: UInt64
    /// How to move past the properties before the attribute straight from a record's bytes.
    ///
    /// Nil when one of them is not a plain attribute (see ``CompiledSkip/isPlain``). A search
    /// reads every record of the entity, and going through each accessor's `skip` cost a
    /// dynamic call and reference counting per property per record.
    let quickSkips: [CompiledSkip]?

    /// Whether a loaded (or registered) object matches.
    func test(_ object: ManagedObject) -> Bool {
        if object.isFault { object.fireFault() }
        return matcher.matches(accessor.storedValue(of: object))
    }

    /// Whether a record's payload matches, read from its bytes without decoding the object;
    /// nil if the bytes cannot tell (a property before the attribute that cannot be skipped,
    /// or text that is not ASCII), and the object must be decoded.
    func test(payload: UnsafeRawBufferPointer, entity: EntityDescription) -> Bool? {
        if let quickSkips, let base = payload.baseAddress {
            // Anything this cannot tell at once (a value cut short, a long varint) goes the
            // reader's way below, which gives the same answer or finds the damage.
            let end = payload.count
            var offset = 0
            if PayloadReader.varint(base, end, &offset) == propertyCount,
                quickSkips.withUnsafeBufferPointer({ skips in
                    for index in skips.indices {
                        guard skips[index].skip(base, end, &offset) else { return false }
                    }
                    return true
                }),
                let length = PayloadReader.varint(base, end, &offset),
                length <= UInt64(end - offset)
            {
                return matcher.matches(
                    utf8: UnsafeRawBufferPointer(start: base + offset, count: Int(length))
                )
            }
        }
        var reader = PayloadReader(payload)
        do {
            guard try reader.readVarint() == UInt64(entity.accessors.count) else { return nil }
            for accessor in entity.accessors[..<accessor.index] {
                guard try accessor.skip(from: &reader) else { return nil }
            }
            return matcher.matches(utf8: try reader.readLengthPrefixed())
        } catch {
            // A damaged record: the decoding that follows reports it.
            return nil
        }
    }
}

extension CompiledTextMatch {
    /// The match of `matcher` on the attribute of `entity` that `accessor` reads.
    init(accessor: NativeAttributeAccessor<String>, matcher: TextMatcher, entity: EntityDescription)
    {
        let skips = entity.schema.properties[..<accessor.index].map(ValueShape.init)
            .map(CompiledSkip.init)
        self.init(
            accessor: accessor,
            matcher: matcher,
            propertyCount: UInt64(entity.accessors.count),
            quickSkips: skips.allSatisfy(\.isPlain) ? skips : nil
        )
    }
}

/// Compares strings as a ``TextMatch`` says, on UTF-8 bytes when it can.
struct TextMatcher {
    let kind: TextMatchKind
    let options: TextMatchOptions
    let text: String
    /// Whether it compares as a `#Predicate`'s `contains` and `starts(with:)` do, character by
    /// character (`Character`'s equality: canonical equivalence, and no match inside a
    /// character), instead of as Foundation's `range(of:options:)`.
    let isCharacterwise: Bool
    /// The text's UTF-8 bytes, lowercased when case is ignored; nil if it is not ASCII.
    let asciiNeedle: [UInt8]?

    init(
        text: String,
        kind: TextMatchKind,
        options: TextMatchOptions,
        characterwise: Bool = false
    ) {
        self.text = text
        self.kind = kind
        self.options = options
        isCharacterwise = characterwise
        let bytes = Array(text.utf8)
        if bytes.allSatisfy({ $0 < 0x80 }) {
            asciiNeedle =
                options.contains(.caseInsensitive) ? bytes.map(Self.lowercased) : bytes
        } else {
            asciiNeedle = nil
        }
    }

    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        // ASCII 'A'...'Z' to 'a'...'z'.
        byte &- 0x41 < 26 ? byte | 0x20 : byte
    }

    /// Whether `value` matches.
    func matches(_ value: String) -> Bool {
        var value = value
        if let answer = value.withUTF8({ matches(utf8: UnsafeRawBufferPointer($0)) }) {
            return answer
        }
        if isCharacterwise { return Self.characterwiseMatch(value, text, kind: kind) }
        return foundationMatches(value)
    }

    /// `value.contains(text)`, `value.starts(with: text)` or `value == text`, compared as a
    /// `#Predicate` compares them: through the generic collection and sequence methods
    /// Foundation's `CollectionContainsCollection` and `SequenceStartsWith` call.
    static func characterwiseMatch(_ value: String, _ text: String, kind: TextMatchKind) -> Bool {
        func contains<Text: Collection>(_ value: Text, _ text: Text) -> Bool
        where Text.Element: Equatable {
            value.contains(text)
        }
        func starts<Text: Sequence>(_ value: Text, with text: Text) -> Bool
        where Text.Element: Equatable {
            value.starts(with: text)
        }
        switch kind {
        case .contains: return contains(value, text)
        case .prefix: return starts(value, with: text)
        case .equals: return value == text
        }
    }

    /// Whether UTF-8 bytes match; nil when the bytes or the text are not ASCII, which
    /// Foundation must compare (or, comparing by character, when the bytes hold a CR).
    ///
    /// ASCII text in an ASCII value: case folding is ASCII's, and ASCII has no diacritics, so
    /// the byte loop gives Foundation's answer. A value with any byte of 0x80 or more defers
    /// to Foundation: a non-ASCII character can fold to ASCII (the Kelvin sign to "k"), and a
    /// combining mark after an ASCII letter makes one character of the two.
    func matches(utf8 value: UnsafeRawBufferPointer) -> Bool? {
        guard let needle = asciiNeedle, PayloadReader.isASCII(value) else { return nil }
        // In ASCII text only CR LF is one character of two bytes: compared by character, "\r"
        // is not in "a\r\nb", which the byte loop would find.
        if isCharacterwise, value.contains(0x0D) { return nil }
        let folds = options.contains(.caseInsensitive)
        let count = needle.count
        switch kind {
        case .equals:
            return value.count == count && startsWith(value, at: 0, needle, folds: folds)
        case .prefix:
            return value.count >= count && startsWith(value, at: 0, needle, folds: folds)
        case .contains:
            guard count > 0 else { return true }
            guard value.count >= count else { return false }
            return contains(value, needle, folds: folds)
        }
    }

    /// Whether the ASCII bytes `value` (at least as many as `needle`'s) contain `needle`.
    ///
    /// The places where the needle's first byte occurs are found eight bytes at a time: a byte
    /// of the word XOR the first byte repeated is zero there. Ignoring case, a letter is found
    /// in either case by setting bit 5 of every byte first (only 'A'...'Z' and 'a'...'z' then
    /// equal a lowercase letter). The zero-byte test may also flag a 0x01 byte above a zero
    /// one, never miss one; every place flagged is checked byte by byte.
    private func contains(_ value: UnsafeRawBufferPointer, _ needle: [UInt8], folds: Bool) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let first = needle[0]
        let foldsFirst = folds && first &- 0x61 < 26
        let pattern = UInt64(first) &* ones
        let caseBits: UInt64 = foldsFirst ? 0x2020_2020_2020_2020 : 0
        // The last place the needle can start.
        let last = value.count - needle.count
        var start = 0
        while start + 8 <= value.count {
            let word = value.loadUnaligned(fromByteOffset: start, as: UInt64.self).littleEndian
            let difference = (word | caseBits) ^ pattern
            var found = (difference &- ones) & ~difference & (ones << 7)
            while found != 0 {
                let place = start + found.trailingZeroBitCount / 8
                if place > last { return false }
                if startsWith(value, at: place, needle, folds: folds) { return true }
                found &= found &- 1
            }
            start += 8
        }
        while start <= last {
            let byte = value[start]
            if (folds ? Self.lowercased(byte) : byte) == first,
                startsWith(value, at: start, needle, folds: folds)
            {
                return true
            }
            start += 1
        }
        return false
    }

    /// Whether the ASCII bytes `value[offset...]` start with `needle`.
    @inline(__always)
    private func startsWith(
        _ value: UnsafeRawBufferPointer,
        at offset: Int,
        _ needle: [UInt8],
        folds: Bool
    ) -> Bool {
        for index in needle.indices {
            let byte = value[offset + index]
            if (folds ? Self.lowercased(byte) : byte) != needle[index] { return false }
        }
        return true
    }

    /// Foundation's comparison, for text that is not ASCII.
    private func foundationMatches(_ value: String) -> Bool {
        var compareOptions: String.CompareOptions = []
        if options.contains(.caseInsensitive) { compareOptions.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { compareOptions.insert(.diacriticInsensitive) }
        switch kind {
        case .contains:
            return text.isEmpty || value.range(of: text, options: compareOptions) != nil
        case .prefix:
            return text.isEmpty
                || value.range(of: text, options: compareOptions.union(.anchored)) != nil
        case .equals:
            return value.compare(text, options: compareOptions) == .orderedSame
        }
    }
}
