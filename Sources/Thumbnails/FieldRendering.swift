/// How scalar fields (one `Float` per cell, one field per chemical) become the colours of an
/// ``Image``.
///
/// Field values are nominally in [0, 1]. Values outside are clamped; NaN draws as 0.
///
/// ```swift
/// // Gray-Scott or FitzHugh-Nagumo, as the original drew them: yellow background, blue-grey pattern.
/// let look = try Image(rendering: .twoChemical, fields: [u, v], width: 256, height: 256)
/// // Belousov-Zhabotinsky: three chemicals as red, green and blue.
/// let bz = try Image(rendering: .threeChemical, fields: [a, b, c], width: 256, height: 256)
/// // One chemical through a perceptual colour map.
/// let heat = try Image(rendering: .colorMap(.magma, range: 0...0.5), fields: [v], width: 256, height: 256)
/// ```
public enum FieldRendering: Sendable, Equatable {
    /// Two fields `u` and `v` drawn as RGB = (u, u, v): the original look for Gray-Scott and
    /// FitzHugh-Nagumo.
    case twoChemical

    /// Three fields `a`, `b` and `c` drawn as RGB = (a, b, c): the original look for
    /// Belousov-Zhabotinsky.
    case threeChemical

    /// One field through a colour map; `range.lowerBound` maps to the first entry and
    /// `range.upperBound` to the last, values between to the nearest entry.
    case colorMap(ColorMap, range: ClosedRange<Float> = 0...1)

    /// One field as 8-bit grey; `range` maps to black through white.
    case gray(range: ClosedRange<Float> = 0...1)

    /// The number of fields the rendering draws from.
    public var fieldCount: Int {
        switch self {
        case .twoChemical: 2
        case .threeChemical: 3
        case .colorMap, .gray: 1
        }
    }

    /// The pixel format of the images it makes.
    public var pixelFormat: PixelFormat {
        switch self {
        case .gray: .gray
        case .twoChemical, .threeChemical, .colorMap: .rgb
        }
    }
}
