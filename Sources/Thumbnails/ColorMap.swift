/// A perceptually uniform colour map of 256 entries for drawing one chemical's field.
///
/// The tables are the published viridis and magma data; their lightness rises steadily from the
/// first entry to the last, so a field reads the same in colour and in grey.
///
/// ```swift
/// let image = try Image(rendering: .colorMap(.viridis), fields: [v], width: 256, height: 256)
/// let darkest = ColorMap.viridis.color(at: 0)  // (0.267004, 0.004874, 0.329415)
/// ```
public struct ColorMap: Sendable, Equatable, CustomStringConvertible {
    /// The number of entries in every colour map: 256.
    public static let entryCount = 256

    /// The viridis map: dark blue through green to yellow.
    public static let viridis = ColorMap(name: "viridis", table: viridisTable)

    /// The magma map: black through purple and orange to pale yellow.
    public static let magma = ColorMap(name: "magma", table: magmaTable)

    /// Every built-in colour map.
    public static let all: [ColorMap] = [.viridis, .magma]

    /// The map's lower-case name, for example `viridis`.
    public let name: String

    /// The entries as 8-bit values, red, green, blue for entry 0, then entry 1, and so on.
    let bytes: [UInt8]

    /// The entries as published, in [0, 1].
    private let table: [(Float, Float, Float)]

    private init(name: String, table: [(Float, Float, Float)]) {
        precondition(table.count == Self.entryCount, "colour map \(name) must have 256 entries")
        self.name = name
        self.table = table
        var bytes: [UInt8] = []
        bytes.reserveCapacity(table.count * 3)
        for (red, green, blue) in table {
            bytes.append(Self.byte(red))
            bytes.append(Self.byte(green))
            bytes.append(Self.byte(blue))
        }
        self.bytes = bytes
    }

    /// Looks a built-in colour map up by name (`viridis` or `magma`), ignoring case.
    ///
    /// - Returns: The map, or `nil` if there is none of that name.
    public static func named(_ name: String) -> ColorMap? {
        all.first { $0.name == name.lowercased() }
    }

    /// The entry at `index` as published: red, green and blue in [0, 1].
    ///
    /// - Precondition: `0 <= index < 256`.
    public func color(at index: Int) -> (red: Float, green: Float, blue: Float) {
        precondition(
            index >= 0 && index < Self.entryCount,
            "colour map index \(index) is outside 0..<256"
        )
        let entry = table[index]
        return (entry.0, entry.1, entry.2)
    }

    /// The entry at `index` rounded to 8 bits per channel.
    ///
    /// - Precondition: `0 <= index < 256`.
    public func rgbBytes(at index: Int) -> (red: UInt8, green: UInt8, blue: UInt8) {
        precondition(
            index >= 0 && index < Self.entryCount,
            "colour map index \(index) is outside 0..<256"
        )
        return (bytes[index * 3], bytes[index * 3 + 1], bytes[index * 3 + 2])
    }

    /// The map's name.
    public var description: String { name }

    /// Two maps are equal when they have the same name.
    public static func == (lhs: ColorMap, rhs: ColorMap) -> Bool {
        lhs.name == rhs.name
    }

    /// A value in [0, 1] as the nearest 8-bit value.
    private static func byte(_ value: Float) -> UInt8 {
        // Adding 0.5 then truncating rounds halves up without calling into libm.
        UInt8(min(max(value, 0), 1) * 255 + 0.5)
    }
}
