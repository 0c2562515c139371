/// Counts the blobs of a pattern and how elongated they are.
///
/// A blob is a 4-connected set of cells above a threshold, of at least `minimumArea` cells. Its
/// elongation is `perimeter² / (4π · area)` with the perimeter counted in cell edges: about 1.6
/// for a digital disc, about `length / (π · width)` for a long strip.
struct BlobCensus {
    var areas: [Int] = []
    var elongations: [Double] = []

    var count: Int { areas.count }

    var medianElongation: Double {
        elongations.isEmpty ? 0 : elongations.sorted()[elongations.count / 2]
    }

    init(plane: [Float], width: Int, height: Int, threshold: Float, minimumArea: Int = 4) {
        var seen = [Bool](repeating: false, count: plane.count)
        var stack: [Int] = []
        for start in plane.indices where plane[start] > threshold && !seen[start] {
            seen[start] = true
            stack.append(start)
            var area = 0
            var perimeter = 0
            while let cell = stack.popLast() {
                area += 1
                let (y, x) = (cell / width, cell % width)
                for (dy, dx) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                    let (ny, nx) = (y + dy, x + dx)
                    guard ny >= 0, ny < height, nx >= 0, nx < width,
                        plane[ny * width + nx] > threshold
                    else {
                        perimeter += 1
                        continue
                    }
                    if !seen[ny * width + nx] {
                        seen[ny * width + nx] = true
                        stack.append(ny * width + nx)
                    }
                }
            }
            if area >= minimumArea {
                areas.append(area)
                elongations.append(Double(perimeter * perimeter) / (4 * Double.pi * Double(area)))
            }
        }
    }
}
