import Foundation

/// `Fixtures/golden.json`, written by scripts/protos/make_golden_fixture.py from the official google-cloud-firestore
/// package: messages it serialised (deterministically, map entries sorted by key) and the Firestore RPCs of its gRPC
/// transport.
struct GoldenFixture: Decodable {
    struct Method: Decodable, Equatable, CustomStringConvertible {
        var name: String
        var input: String
        var output: String
        var clientStreaming: Bool
        var serverStreaming: Bool

        var description: String {
            "\(name)(\(clientStreaming ? "stream " : "")\(input)) -> \(serverStreaming ? "stream " : "")\(output)"
        }
    }

    struct Message: Decodable {
        var name: String
        var type: String
        var base64: String
    }

    var versions: [String: String]
    var methods: [Method]
    var messages: [Message]

    static let shared: GoldenFixture = {
        let url = Bundle.module.url(forResource: "Fixtures/golden", withExtension: "json")!
        // A broken fixture is a broken test setup; fail loudly.
        return try! JSONDecoder().decode(GoldenFixture.self, from: Data(contentsOf: url))
    }()

    /// The serialised bytes of the message called `name`.
    static func bytes(_ name: String) throws -> Data {
        guard let message = shared.messages.first(where: { $0.name == name }) else {
            throw FixtureError(description: "golden.json has no message \(name)")
        }
        guard let data = Data(base64Encoded: message.base64) else {
            throw FixtureError(description: "golden.json message \(name) is not base64")
        }
        return data
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
}
