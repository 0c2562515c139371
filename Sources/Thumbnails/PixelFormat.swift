/// The channel layout of an 8-bit ``Image``.
public enum PixelFormat: Int, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    /// One grey channel.
    case gray = 1
    /// Red, green and blue.
    case rgb = 3
    /// Red, green, blue and (straight, not premultiplied) alpha.
    case rgba = 4

    /// The number of 8-bit channels per pixel.
    public var channelCount: Int { rawValue }

    /// A lower-case name: `gray`, `rgb` or `rgba`.
    public var description: String {
        switch self {
        case .gray: "gray"
        case .rgb: "rgb"
        case .rgba: "rgba"
        }
    }
}
