import Testing

@testable import Thumbnails

@Suite("Area-averaging resize")
struct ResizeTests {
    @Test(
        "640 to 160 is exactly the rounded mean of each 4x4 block",
        arguments: [(640, 640), (640, 480)]
    )
    func exactBoxAverage(size: (Int, Int)) throws {
        let (width, height) = size
        let image = try makeRandomImage(width: width, height: height, format: .rgb, seed: 2024)
        let thumbnail = try image.resized(toFit: 160)
        #expect(thumbnail.width == 160)
        #expect(thumbnail.height == height / 4)
        var mismatches = 0
        for y in 0..<thumbnail.height {
            for x in 0..<thumbnail.width {
                for channel in 0..<3 {
                    var sum = 0
                    for dy in 0..<4 {
                        for dx in 0..<4 {
                            sum += Int(
                                image.pixels[((4 * y + dy) * width + 4 * x + dx) * 3 + channel]
                            )
                        }
                    }
                    // The mean of 16 values, rounded half up.
                    if Int(thumbnail.pixels[(y * 160 + x) * 3 + channel]) != (sum + 8) / 16 {
                        mismatches += 1
                    }
                }
            }
        }
        #expect(mismatches == 0)
    }

    static let fractionalCases: [(source: (Int, Int), target: (Int, Int))] = [
        ((641, 479), (160, 120)),
        ((333, 1000), (53, 160)),
        ((100, 70), (160, 112)),
        ((7, 5), (3, 2)),
        ((640, 640), (150, 150)),
    ]

    @Test("fitting keeps the aspect ratio", arguments: fractionalCases)
    func fitting(source: (Int, Int), target: (Int, Int)) throws {
        let side = max(target.0, target.1)
        let image = try Image(width: source.0, height: source.1, format: .gray, filledWith: [0])
        let resized = try image.resized(toFit: side)
        #expect(resized.width == target.0)
        #expect(resized.height == target.1)
    }

    @Test("extreme aspect ratios keep at least one pixel")
    func thinImages() throws {
        #expect(Image.fittingSize(width: 1000, height: 10, side: 160) == (160, 2))
        #expect(Image.fittingSize(width: 1000, height: 1, side: 160) == (160, 1))
        #expect(Image.fittingSize(width: 1, height: 5000, side: 160) == (1, 160))
    }

    @Test("a constant image stays constant at fractional ratios", arguments: fractionalCases)
    func constant(source: (Int, Int), target: (Int, Int)) throws {
        let color: [UInt8] = [10, 200, 37, 129]
        let image = try Image(width: source.0, height: source.1, format: .rgba, filledWith: color)
        let resized = try image.resized(width: target.0, height: target.1)
        for index in stride(from: 0, to: resized.pixels.count, by: 4) {
            #expect(Array(resized.pixels[index..<index + 4]) == color)
        }
    }

    @Test("each pixel is within rounding of the exact area average", arguments: fractionalCases)
    func matchesReference(source: (Int, Int), target: (Int, Int)) throws {
        let image = try makeRandomImage(width: source.0, height: source.1, format: .gray, seed: 77)
        let resized = try image.resized(width: target.0, height: target.1)
        let reference = Self.referenceAreaAverage(image, width: target.0, height: target.1)
        var worst = 0.0
        for (value, exact) in zip(resized.pixels, reference) {
            worst = max(worst, abs(Double(value) - exact))
        }
        #expect(worst <= 0.5 + 1e-9)
    }

    @Test("the mean is preserved within rounding", arguments: fractionalCases)
    func meanPreserved(source: (Int, Int), target: (Int, Int)) throws {
        let image = try makeRandomImage(width: source.0, height: source.1, format: .rgb, seed: 5)
        let resized = try image.resized(width: target.0, height: target.1)
        for channel in 0..<3 {
            let before = Self.mean(image, channel: channel)
            let after = Self.mean(resized, channel: channel)
            #expect(abs(before - after) <= 0.5)
        }
    }

    @Test("one-pixel stripes average to grey instead of aliasing")
    func noAliasing() throws {
        var image = try Image(width: 640, height: 64, format: .gray, filledWith: [0])
        for y in 0..<64 {
            for x in stride(from: 0, to: 640, by: 2) {
                image.pixels[y * 640 + x] = 255
            }
        }
        let whole = try image.resized(width: 160, height: 16)
        #expect(whole.pixels.allSatisfy { $0 == 128 })
        // At 640/150 each output pixel covers 4.27 stripes; the imbalance is at most one stripe.
        let fractional = try image.resized(width: 150, height: 15)
        let bound = 255.0 / 2 / (640.0 / 150.0)
        #expect(fractional.pixels.allSatisfy { abs(Double($0) - 127.5) <= bound + 0.5 })
    }

    @Test("the same size returns the image unchanged")
    func identity() throws {
        let image = try makeRandomImage(width: 160, height: 100, format: .rgb, seed: 1)
        #expect(try image.resized(toFit: 160) == image)
    }

    @Test("sizes below 1 are invalid arguments")
    func badSizes() throws {
        let image = try Image(width: 4, height: 4, format: .gray, filledWith: [0])
        #expect(throws: ThumbnailError.self) { try image.resized(toFit: 0) }
        #expect(throws: ThumbnailError.self) { try image.resized(width: 0, height: 3) }
        #expect(throws: ThumbnailError.self) { try image.resized(width: 3, height: -1) }
    }

    // MARK: - Helpers

    static func mean(_ image: Image, channel: Int) -> Double {
        let channels = image.format.channelCount
        var sum = 0
        for index in stride(from: channel, to: image.pixels.count, by: channels) {
            sum += Int(image.pixels[index])
        }
        return Double(sum) / Double(image.width * image.height)
    }

    /// Area averaging computed the slow, obvious way in floating point, one grey channel.
    static func referenceAreaAverage(_ image: Image, width: Int, height: Int) -> [Double] {
        let scaleX = Double(image.width) / Double(width)
        let scaleY = Double(image.height) / Double(height)
        func overlap(_ a0: Double, _ a1: Double, _ b0: Double, _ b1: Double) -> Double {
            max(0, min(a1, b1) - max(a0, b0))
        }
        var result: [Double] = []
        for y in 0..<height {
            let top = Double(y) * scaleY
            let bottom = Double(y + 1) * scaleY
            for x in 0..<width {
                let left = Double(x) * scaleX
                let right = Double(x + 1) * scaleX
                var sum = 0.0
                for sourceY in Int(top)..<min(image.height, Int(bottom) + 1) {
                    let weightY = overlap(top, bottom, Double(sourceY), Double(sourceY + 1))
                    for sourceX in Int(left)..<min(image.width, Int(right) + 1) {
                        let weight =
                            weightY * overlap(left, right, Double(sourceX), Double(sourceX + 1))
                        sum += weight * Double(image.pixels[sourceY * image.width + sourceX])
                    }
                }
                result.append(sum / (scaleX * scaleY))
            }
        }
        return result
    }
}
