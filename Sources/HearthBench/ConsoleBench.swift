import AsyncHTTPClient
import Foundation
import HearthCore
import HearthDocuments
import NIOCore
import NIOHTTP1

/// `hearth bench --phases console`: what the console's same-origin proxy costs. The same point
/// gets of one document, straight to the Firestore port (the baseline) and through the console
/// (`/api/proxy/firestore/…` with a session cookie: session check, then a loopback request with
/// the console's credential), in the same run.
struct ConsoleBench {
    let load: Load
    let engine: DocumentEngine

    func run(consolePort: Int, firestorePort: Int) async throws {
        let db = DatabaseName(project: "demo-hearth", database: "(default)")
        for i in 0..<1000 {
            _ = try await engine.commit(db, [.set(ResourcePath(["console-bench", "d\(i)"]), ["title": .string("hello"), "n": .integer(Int64(i))])])
        }
        let path = "/v1/projects/demo-hearth/databases/(default)/documents/console-bench"
        print(try await load.run("baseline: point get, Firestore port (REST)") { i in
            (HTTPMethod.GET, "http://127.0.0.1:\(firestorePort)\(path)/d\(abs(i) % 1000)", nil)
        })
        // Sign in as the emulator's owner, as the console's page does.
        var signIn = HTTPClientRequest(url: "http://127.0.0.1:\(consolePort)/api/session")
        signIn.method = .POST
        signIn.headers.add(name: "content-type", value: "application/json")
        signIn.body = .bytes(ByteBuffer(string: #"{"method":"token","token":"owner"}"#))
        let answer = try await load.client.execute(signIn, timeout: .seconds(30))
        _ = try await answer.body.collect(upTo: 1 << 20)
        guard answer.status == .ok, let cookie = answer.headers.first(name: "set-cookie")?.split(separator: ";").first else {
            throw HearthError(.internal, "console sign-in failed: HTTP \(answer.status.code)")
        }
        print(try await load.with(cookie: String(cookie)).run("console: same point get via its proxy") { i in
            (HTTPMethod.GET, "http://127.0.0.1:\(consolePort)/api/proxy/firestore\(path)/d\(abs(i) % 1000)", nil)
        })
    }
}
