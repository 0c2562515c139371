import ReactionDiffusion
import Testing

@Suite("Seeds are reproducible and look like the original's")
struct InitialStateTests {
    @Test("equal seeds give equal states; different seeds differ", arguments: Model.allCases)
    func reproducible(model: Model) {
        let a = InitialState.make(for: model, width: 64, height: 48, seed: 7)
        let b = InitialState.make(for: model, width: 64, height: 48, seed: 7)
        let c = InitialState.make(for: model, width: 64, height: 48, seed: 8)
        #expect(a == b)
        #expect(a != c)
        #expect(a.chemicalCount == model.chemicalCount && a.width == 64 && a.height == 48)
    }

    @Test("the generator's sequence is fixed for a seed and uniform on [0, 1)")
    func generator() {
        var first = SeededGenerator(seed: 123)
        var second = SeededGenerator(seed: 123)
        var values: [Float] = []
        for _ in 0..<10_000 {
            let value = first.nextUnitFloat()
            #expect(value == second.nextUnitFloat())
            values.append(value)
        }
        #expect(values.allSatisfy { $0 >= 0 && $0 < 1 })
        let mean = values.reduce(0, +) / Float(values.count)
        #expect(abs(mean - 0.5) < 0.01)
        #expect(Set(values).count > 9_900)
    }

    @Test("Gray-Scott: (1, 0) around a centred square of about (0.25, 0.75), 37% of the side")
    func grayScott() {
        let field = InitialState.make(for: .grayScott, width: 100, height: 100, seed: 1)
        var square: [(Float, Float)] = []
        var columns = Set<Int>()
        var rows = Set<Int>()
        for y in 0..<100 {
            for x in 0..<100 where field[1, y, x] != 0 || field[0, y, x] != 1 {
                square.append((field[0, y, x], field[1, y, x]))
                columns.insert(x)
                rows.insert(y)
            }
        }
        #expect(columns.count == 37 && rows.count == 37)
        #expect(square.count == 37 * 37)
        #expect(columns.min() == 31 && rows.min() == 31)
        let meanU = square.map(\.0).reduce(0, +) / Float(square.count)
        let meanV = square.map(\.1).reduce(0, +) / Float(square.count)
        #expect(abs(meanU - 0.25) < 0.03 && abs(meanV - 0.75) < 0.03)
        #expect(square.allSatisfy { abs($0.0 - 0.25) <= 0.15 && abs($0.1 - 0.75) <= 0.15 })
        #expect(Set(square.map(\.0)).count > 100, "the square should be noisy")
    }

    @Test("FitzHugh-Nagumo: a blotchy noisy background with a centred vertical bar")
    func fitzHughNagumo() {
        let field = InitialState.make(for: .fitzHughNagumo, width: 128, height: 128, seed: 1)
        var background: [(Float, Float)] = []
        var barCells = 0
        for y in 0..<128 {
            for x in 0..<128 {
                let (a, b) = (field[0, y, x], field[1, y, x])
                if a > 0.5 {
                    barCells += 1
                    #expect(x >= 52 && x < 76 && y >= 28 && y < 100)
                    #expect(abs(a - 0.74) <= 0.05 && abs(b - 0.25) <= 0.05)
                } else {
                    background.append((a, b))
                    #expect(abs(a - 0.13) <= 0.18 && abs(b - 0.29) <= 0.18)
                }
            }
        }
        #expect(barCells == 22 * 72, "a bar 16% wide and 56% tall")
        let meanA = background.map(\.0).reduce(0, +) / Float(background.count)
        let meanB = background.map(\.1).reduce(0, +) / Float(background.count)
        #expect(abs(meanA - 0.13) < 0.03 && abs(meanB - 0.29) < 0.03)
        #expect(background.map(\.0).max()! - background.map(\.0).min()! > 0.2, "blotches and noise")
    }

    @Test("Belousov-Zhabotinsky: smooth noise with mean about 0.65 per chemical")
    func belousovZhabotinsky() {
        let field = InitialState.make(for: .belousovZhabotinsky, width: 128, height: 128, seed: 1)
        for chemical in 0..<3 {
            let plane = Array(field.plane(chemical))
            let mean = plane.reduce(0, +) / Float(plane.count)
            #expect(abs(mean - 0.65) < 0.05, "chemical \(chemical) mean \(mean)")
            #expect(plane.allSatisfy { $0 >= 0.3 && $0 <= 1 })
            var step: Float = 0
            for y in 0..<128 {
                for x in 1..<128 {
                    step = max(step, abs(field[chemical, y, x] - field[chemical, y, x - 1]))
                }
            }
            #expect(step < 0.15, "neighbouring cells should differ little (largest \(step))")
            #expect((plane.max()! - plane.min()!) > 0.4, "but the field should vary")
        }
    }
}
