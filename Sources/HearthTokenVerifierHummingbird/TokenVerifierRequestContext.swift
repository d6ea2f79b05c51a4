public import Hummingbird
public import HearthTokenVerifier

/// A request context that can carry the verified caller. Adopt it in your own context:
///
/// ```swift
/// struct AppContext: TokenVerifierRequestContext {
///     var coreContext: CoreRequestContextStorage
///     var verifiedToken: VerifiedToken?
///     init(source: Source) { coreContext = .init(source: source) }
/// }
/// ```
public protocol TokenVerifierRequestContext: RequestContext {
    var verifiedToken: VerifiedToken? { get set }
}

extension TokenVerifierRequestContext {
    /// The verified caller; throws 401 if the middleware did not run or let the request through without one.
    public func requireToken() throws -> VerifiedToken {
        guard let verifiedToken else { throw HTTPError(.unauthorized, message: "Authentication required.") }
        return verifiedToken
    }
}
