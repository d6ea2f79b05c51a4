/// Where a verifier gets its keys. The library's `HTTPPublicKeySource` fetches a URL; tests
/// and servers that hold the keys themselves supply their own.
public protocol PublicKeySource: Sendable {
    func fetchKeys() async throws(TokenVerificationError) -> PublicKeySet
}
