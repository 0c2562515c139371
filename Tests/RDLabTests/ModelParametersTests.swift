import Foundation
import ReactionDiffusion
import Testing

@Suite("list and show print only the parameters of each configuration's model")
struct ModelParametersTests {
    @Test("show's text has one parameters line with the model's names; --json lists only those")
    func onlyTheModels() throws {
        let lab = try LabFixture()
        for model in Model.allCases {
            try lab.succeed([
                "run", "--model", model.name, "--size", "8", "--steps", "1", "--save", model.name,
            ])
        }
        let list = try lab.json(["list"]) as? [[String: Any]] ?? []
        #expect(list.count == 4)
        for model in Model.allCases {
            let text = try lab.succeed(["show", model.name]).lines
            #expect(!text.contains { $0.hasPrefix("all:") })
            let line = try #require(text.first { $0.hasPrefix("parameters:") })
            let names = line.dropFirst("parameters:".count).split(separator: " ").map {
                String($0.prefix { $0 != "=" })
            }
            #expect(names == model.parameterNames)

            let shown = try lab.json(["show", model.name]) as? [String: Any] ?? [:]
            let parameters = shown["parameters"] as? [String: Any] ?? [:]
            #expect(Set(parameters.keys) == Set(model.parameterNames))
            let listed = list.first { $0["name"] as? String == model.name }
            let listedParameters = listed?["parameters"] as? [String: Any] ?? [:]
            #expect(Set(listedParameters.keys) == Set(model.parameterNames))
        }
    }
}
