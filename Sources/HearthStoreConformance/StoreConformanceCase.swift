public import Testing

/// One named scenario of a store conformance suite (documents, accounts, the Realtime Database
/// tree, object metadata, App Check). It runs against any backend: the test target hands it a
/// factory of fresh, empty stores (a scenario may ask for more than one), and it records failures
/// with `#expect`. A test target runs a suite as
///
/// ```swift
/// @Test(arguments: AppCheckStoreConformance.all)
/// func conformance(_ scenario: AppCheckStoreConformance.Case) async throws {
///     try await scenario.run { try MyAppCheckStore() }
/// }
/// ```
///
/// or all at once with ``runAll(_:make:)``.
public struct StoreConformanceCase<Store: Sendable>: Sendable, CustomTestStringConvertible {
    public typealias MakeStore = @Sendable () async throws -> Store

    public let name: String
    let body: @Sendable (MakeStore) async throws -> Void

    /// A scenario that opens its own stores from the factory.
    public init(name: String, body: @escaping @Sendable (MakeStore) async throws -> Void) {
        self.name = name
        self.body = body
    }

    /// A scenario that needs exactly one fresh store.
    public init(name: String, store body: @escaping @Sendable (Store) async throws -> Void) {
        self.init(name: name) { make in try await body(try await make()) }
    }

    public var testDescription: String { name }

    /// Runs the scenario on fresh stores from `make`.
    public func run(_ make: MakeStore) async throws { try await body(make) }

    /// Every scenario of `cases` in turn, each on fresh stores.
    public static func runAll(_ cases: [Self], make: MakeStore) async throws {
        for scenario in cases { try await scenario.run(make) }
    }
}
