// The thumbnailer's benchmark: a 640x640 field to a 160x160 thumbnail to PNG bytes, stage by
// stage, and the PNG sizes of typical pattern thumbnails.
//
//     objectlog-bench thumbnails [--runs N] [--quick]

import Foundation
import Thumbnails

func runThumbnailBenchmarks(arguments: [String]) {
    var runs = 40
    if let index = arguments.firstIndex(of: "--runs"), index + 1 < arguments.count,
        let value = Int(arguments[index + 1]),
        value > 0
    {
        runs = value
    } else if arguments.contains("--quick") {
        runs = 5
    }
    #if DEBUG
    print("warning: this is a debug build; timings mean little (use swift build -c release)")
    #endif
    do {
        try thumbnailTimings(runs: runs)
        try thumbnailSizes()
    } catch {
        print("error: thumbnail benchmark failed: \(error)")
    }
}

/// A synthetic reaction-diffusion-like field: spots or stripes of `v` on a `u` background.
private func syntheticField(side: Int, stripes: Bool) -> (u: [Float], v: [Float]) {
    var u = [Float](repeating: 1, count: side * side)
    var v = [Float](repeating: 0, count: side * side)
    let period = Double(side) / 20  // as many features as a typical Gray-Scott run shows
    for y in 0..<side {
        for x in 0..<side {
            let phaseX = Double(x) * 2 * .pi / period
            let phaseY = Double(y) * 2 * .pi / period
            let wave = stripes ? sin(phaseX + 0.6 * sin(phaseY / 3)) : sin(phaseX) * sin(phaseY)
            let level = Float(max(0, wave))
            let feature = level * level
            u[y * side + x] = 1 - 0.55 * feature
            v[y * side + x] = 0.32 * feature
        }
    }
    return (u, v)
}

/// Times `body` `runs` times after two warm-up calls; returns the median and minimum in ms.
private func measure(
    runs: Int,
    _ body: () throws -> Int
) rethrows -> (median: Double, min: Double, sink: Int) {
    var sink = 0
    for _ in 0..<2 {
        sink &+= try body()
    }
    let clock = ContinuousClock()
    var samples: [Double] = []
    for _ in 0..<runs {
        var result = 0
        let elapsed = try clock.measure { result = try body() }
        sink &+= result
        let (seconds, attoseconds) = elapsed.components
        samples.append(Double(seconds) * 1e3 + Double(attoseconds) * 1e-15)
    }
    samples.sort()
    return (samples[samples.count / 2], samples[0], sink)
}

private func thumbnailTimings(runs: Int) throws {
    let side = 640
    let field = syntheticField(side: side, stripes: false)
    let image = try Image(
        rendering: .twoChemical,
        fields: [field.u, field.v],
        width: side,
        height: side
    )
    let thumbnail = try image.resized(toFit: Image.thumbnailSide)

    print(
        "Thumbnails: 640x640 field -> 160x160 thumbnail -> PNG (libpng \(Image.libpngVersion)), \(runs) runs"
    )
    print(pad("stage", 44) + pad("median ms", 12, left: true) + pad("min ms", 10, left: true))
    var sink = 0
    let stages: [(String, () throws -> Int)] = [
        (
            "fields -> 640x640 RGB image (u, u, v)",
            {
                try Image(
                    rendering: .twoChemical,
                    fields: [field.u, field.v],
                    width: side,
                    height: side
                ).pixels.count
            }
        ),
        (
            "640x640 image -> 160x160 (area average)",
            { try image.resized(toFit: Image.thumbnailSide).pixels.count }
        ),
        ("160x160 thumbnail -> PNG bytes (level 6)", { try thumbnail.pngBytes().count }),
        (
            "whole: fields -> thumbnail -> PNG (u, u, v)",
            {
                try Image(
                    rendering: .twoChemical,
                    fields: [field.u, field.v],
                    width: side,
                    height: side
                )
                .resized(toFit: Image.thumbnailSide).pngBytes().count
            }
        ),
        (
            "whole: field -> thumbnail -> PNG (viridis)",
            {
                try Image(
                    rendering: .colorMap(.viridis),
                    fields: [field.v],
                    width: side,
                    height: side
                )
                .resized(toFit: Image.thumbnailSide).pngBytes().count
            }
        ),
        (
            "PNG decode of the 160x160 thumbnail",
            { [bytes = try thumbnail.pngBytes()] in try Image(pngBytes: bytes).pixels.count }
        ),
    ]
    for (name, body) in stages {
        let result = try measure(runs: runs, body)
        sink &+= result.sink
        print(
            pad(name, 44) + pad(format(result.median), 12, left: true)
                + pad(format(result.min), 10, left: true)
        )
    }
    if sink == 42 { print("") }  // keeps the work observable
}

private func thumbnailSizes() throws {
    let side = 640
    let spots = syntheticField(side: side, stripes: false)
    let stripes = syntheticField(side: side, stripes: true)
    var generator = SystemRandomNumberGenerator()
    let noise = (0..<(side * side)).map { _ in Float.random(in: 0...1, using: &generator) }
    let thumbnails: [(String, Image)] = [
        (
            "spots, (u, u, v)",
            try Image(
                rendering: .twoChemical,
                fields: [spots.u, spots.v],
                width: side,
                height: side
            )
        ),
        (
            "stripes, (u, u, v)",
            try Image(
                rendering: .twoChemical,
                fields: [stripes.u, stripes.v],
                width: side,
                height: side
            )
        ),
        (
            "spots, viridis of v",
            try Image(
                rendering: .colorMap(.viridis, range: 0...0.32),
                fields: [spots.v],
                width: side,
                height: side
            )
        ),
        (
            "white noise, grey (1 channel)",
            try Image(rendering: .gray(), fields: [noise], width: side, height: side)
        ),
    ]
    let raw = Image.thumbnailSide * Image.thumbnailSide * 3
    print("")
    print("PNG bytes of 160x160 thumbnails (raw RGB is \(raw) bytes)")
    print(
        pad("pattern", 32) + pad("level 1", 10, left: true) + pad("level 6", 10, left: true)
            + pad("level 9", 10, left: true)
    )
    for (name, image) in thumbnails {
        let thumbnail = try image.resized(toFit: Image.thumbnailSide)
        var line = pad(name, 32)
        for level in [1, 6, 9] {
            line += pad(
                String(try thumbnail.pngBytes(compressionLevel: level).count),
                10,
                left: true
            )
        }
        print(line)
    }
}

private func format(_ milliseconds: Double) -> String {
    String(format: "%.3f", milliseconds)
}

private func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return left ? padding + text : text + padding
}
