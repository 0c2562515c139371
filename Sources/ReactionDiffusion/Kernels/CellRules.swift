/// A model whose two chemicals each see a five-point neighbourhood: Gray-Scott and
/// FitzHugh-Nagumo.
protocol TwoChemicalRule {
    /// Returns both chemicals' next values from their neighbourhoods.
    func update<V: FloatLanes>(_ first: Cross<V>, _ second: Cross<V>) -> (V, V)
}

/// Gray-Scott: `r = u·v·v`, `u' = u + Du·lap(u) − r + F·(1 − u)`,
/// `v' = v + Dv·lap(v) + r − (F + K)·v`, evaluated left to right.
struct GrayScottRule: TwoChemicalRule {
    let f: Float
    let du: Float
    let dv: Float
    let feedPlusKill: Float

    init(_ parameters: Parameters) {
        f = parameters.f
        du = parameters.du
        dv = parameters.dv
        feedPlusKill = parameters.f + parameters.k
    }

    @inline(__always)
    func update<V: FloatLanes>(_ u: Cross<V>, _ v: Cross<V>) -> (V, V) {
        let uc = u.centre
        let vc = v.centre
        let reaction = (uc * vc) * vc
        let nextU =
            ((uc + V(broadcast: du) * u.laplacian) - reaction)
            + V(broadcast: f) * (V(broadcast: 1) - uc)
        let nextV =
            ((vc + V(broadcast: dv) * v.laplacian) + reaction) - V(broadcast: feedPlusKill) * vc
        return (nextU, nextV)
    }
}

/// FitzHugh-Nagumo: `da = k1·a − k2·a·a − a·a·a − b + lap(a)`,
/// `db = ε·(k3·a − a1·b − a0) + δ·lap(b)`, `a' = a + dt·da`, `b' = b + dt·db`.
struct FitzHughNagumoRule: TwoChemicalRule {
    let parameters: Parameters

    init(_ parameters: Parameters) {
        self.parameters = parameters
    }

    @inline(__always)
    func update<V: FloatLanes>(_ a: Cross<V>, _ b: Cross<V>) -> (V, V) {
        let p = parameters
        let ac = a.centre
        let bc = b.centre
        let da =
            ((((V(broadcast: p.k1) * ac) - (V(broadcast: p.k2) * ac) * ac) - (ac * ac) * ac) - bc)
            + a.laplacian
        let db =
            V(broadcast: p.epsilon)
            * (((V(broadcast: p.k3) * ac) - V(broadcast: p.a1) * bc) - V(broadcast: p.a0))
            + V(broadcast: p.delta) * b.laplacian
        let dt = V(broadcast: p.timestep)
        return (ac + dt * da, bc + dt * db)
    }
}

/// Belousov-Zhabotinsky on the original's 3×3 means ā, b̄, c̄:
/// `a' = ā + ā·(α·γ·b̄) − c̄`, `b' = b̄ + b̄·(β·c̄ − α·ā)`, `c' = c̄ + c̄·(γ·ā − β·b̄)`.
struct BelousovZhabotinskyRule {
    let alpha: Float
    let beta: Float
    let gamma: Float
    let alphaGamma: Float

    init(_ parameters: Parameters) {
        alpha = parameters.alpha
        beta = parameters.beta
        gamma = parameters.gamma
        alphaGamma = parameters.alpha * parameters.gamma
    }

    @inline(__always)
    func update<V: FloatLanes>(_ a: Box<V>, _ b: Box<V>, _ c: Box<V>) -> (V, V, V) {
        let am = a.originalMean
        let bm = b.originalMean
        let cm = c.originalMean
        let nextA = (am + am * (V(broadcast: alphaGamma) * bm)) - cm
        let nextB = bm + bm * (V(broadcast: beta) * cm - V(broadcast: alpha) * am)
        let nextC = cm + cm * (V(broadcast: gamma) * am - V(broadcast: beta) * bm)
        return (nextA, nextB, nextC)
    }
}
