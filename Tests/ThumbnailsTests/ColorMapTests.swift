import Foundation
import Testing

@testable import Thumbnails

@Suite("Colour maps")
struct ColorMapTests {
    @Test("viridis and magma have the published end points")
    func endPoints() {
        let viridisFirst = ColorMap.viridis.color(at: 0)
        let viridisLast = ColorMap.viridis.color(at: 255)
        let magmaFirst = ColorMap.magma.color(at: 0)
        let magmaLast = ColorMap.magma.color(at: 255)
        #expect(viridisFirst == (0.267004, 0.004874, 0.329415))
        #expect(viridisLast == (0.993248, 0.906157, 0.143936))
        #expect(magmaFirst == (0.001462, 0.000466, 0.013866))
        #expect(magmaLast == (0.987053, 0.991438, 0.749504))
    }

    /// CIE L* of an sRGB colour: the lightness a perceptual map must raise steadily.
    static func lightness(_ color: (red: Float, green: Float, blue: Float)) -> Double {
        func linear(_ value: Float) -> Double {
            let c = Double(value)
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        let luminance =
            0.2126 * linear(color.red) + 0.7152 * linear(color.green) + 0.0722 * linear(color.blue)
        let f =
            luminance > 216.0 / 24_389 ? cbrt(luminance) : (24_389.0 / 27 * luminance + 16) / 116
        return 116 * f - 16
    }

    @Test(
        "lightness rises at every step and neighbours are close (no mistyped entries)",
        arguments: ColorMap.all
    )
    func smooth(map: ColorMap) {
        for index in 1..<ColorMap.entryCount {
            let previous = map.color(at: index - 1)
            let current = map.color(at: index)
            #expect(Self.lightness(current) > Self.lightness(previous), "\(map) entry \(index)")
            let step = max(
                abs(current.red - previous.red),
                abs(current.green - previous.green),
                abs(current.blue - previous.blue)
            )
            #expect(step < 0.015, "\(map) entry \(index) jumps by \(step)")
            if index >= 2 {
                // The tables are smooth curves: the change of the step is tiny.
                let older = map.color(at: index - 2)
                let bend = max(
                    abs(current.red - 2 * previous.red + older.red),
                    abs(current.green - 2 * previous.green + older.green),
                    abs(current.blue - 2 * previous.blue + older.blue)
                )
                #expect(bend < 0.002, "\(map) entry \(index - 1) bends by \(bend)")
            }
        }
    }

    @Test("8-bit entries are the rounded published values", arguments: ColorMap.all)
    func bytes(map: ColorMap) {
        for index in [0, 1, 127, 128, 254, 255] {
            let color = map.color(at: index)
            let bytes = map.rgbBytes(at: index)
            #expect(abs(Float(bytes.red) - color.red * 255) <= 0.5)
            #expect(abs(Float(bytes.green) - color.green * 255) <= 0.5)
            #expect(abs(Float(bytes.blue) - color.blue * 255) <= 0.5)
        }
    }

    @Test("maps are found by name, ignoring case")
    func names() {
        #expect(ColorMap.named("viridis") == .viridis)
        #expect(ColorMap.named("Magma") == .magma)
        #expect(ColorMap.named("jet") == nil)
    }
}
