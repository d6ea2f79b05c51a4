/// One dependency's answer to `/readyz`'s "can you take writes now?", supplied by the
/// composition root for each store of its backend (the server itself opens none): it returns
/// when the store is reachable and takes writes, and throws `UNAVAILABLE` with the reason
/// otherwise. The api port's `/readyz` runs every check, in order, once every listener is bound.
public struct ReadinessCheck: Sendable {
    /// What is checked, for logs ("data directory", "hearth.sqlite").
    public let name: String
    public let check: @Sendable () async throws -> Void

    public init(_ name: String, check: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.check = check
    }
}
