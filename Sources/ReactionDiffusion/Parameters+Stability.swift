extension Parameters {
    /// Returns one sentence per parameter the model reads that lies outside the range where the
    /// explicit step is stable, or is not a finite number; empty when all are fine.
    ///
    /// The five-point Laplacian with unit spacing is stable under explicit Euler steps only while
    /// each diffusion coefficient times the time step is at most 1/4. So Gray-Scott's `du` and
    /// `dv` must lie in [0, 0.25] (and `f`, `k` in [0, 1]); FitzHugh-Nagumo's `timestep` must lie
    /// in (0, 0.25] and `timestep × delta` in [0, 0.25]. Belousov-Zhabotinsky only averages, so
    /// any finite rates are accepted. Callers may still run with such values on request.
    public func stabilityProblems(for model: Model) -> [String] {
        var problems: [String] = []
        for name in model.parameterNames {
            let value = value(forName: name)!
            if !value.isFinite {
                problems.append("\(name) = \(value) is not a finite number")
            }
        }
        guard problems.isEmpty else { return problems }

        func require(_ name: String, _ value: Float, in range: ClosedRange<Float>, _ why: String) {
            if !range.contains(value) {
                problems.append(
                    "\(name) = \(value) is outside [\(range.lowerBound), \(range.upperBound)]\(why)"
                )
            }
        }
        switch model {
        case .grayScott:
            let why = " (diffusion rates above 0.25 make the explicit step unstable)"
            require("du", du, in: 0...0.25, why)
            require("dv", dv, in: 0...0.25, why)
            require("f", f, in: 0...1, "")
            require("k", k, in: 0...1, "")
        case .fitzHughNagumo:
            if !(timestep > 0 && timestep <= 0.25) {
                problems.append(
                    "timestep = \(timestep) is outside (0, 0.25] (the explicit step is unstable)"
                )
            } else if !(delta >= 0 && timestep * delta <= 0.25) {
                problems.append(
                    "delta = \(delta) is outside [0, \(0.25 / timestep)] for timestep \(timestep) "
                        + "(timestep × delta above 0.25 makes the explicit step unstable)"
                )
            }
        case .belousovZhabotinsky:
            break
        }
        return problems
    }
}
