import Foundation
import HearthCore
import HearthDocuments
import HearthFirestoreProto
import SwiftProtobuf

/// The grpc phase: single-document Commit and GetDocument over gRPC (h2c) on the Firestore
/// port, printed after the REST write and get of the same run.
struct GRPCBench {
    let port: Int
    let clients: Int
    let connections: Int
    let duration: Double

    static let database = "projects/demo-hearth/databases/(default)"

    static func commitRequest(_ i: Int) -> Google_Firestore_V1_CommitRequest {
        func value(_ set: (inout Google_Firestore_V1_Value) -> Void) -> Google_Firestore_V1_Value {
            var v = Google_Firestore_V1_Value()
            set(&v)
            return v
        }
        var doc = Google_Firestore_V1_Document()
        doc.name = "\(database)/documents/grpcbench/g\(i)"
        doc.fields = [
            "title": value { $0.stringValue = "hello world" }, "n": value { $0.integerValue = Int64(i) },
            "group": value { $0.integerValue = Int64(i % 100) }, "score": value { $0.doubleValue = Double(i % 997) / 3 },
        ]
        var write = Google_Firestore_V1_Write()
        write.update = doc
        var request = Google_Firestore_V1_CommitRequest()
        request.database = database
        request.writes = [write]
        return request
    }

    func run(engine: DocumentEngine) async throws {
        let client = try await GRPCBenchClient.connect(port: port, connections: connections)
        do {
            // Warm up the connections.
            for i in 0..<connections {
                _ = try await client.unary("Commit", Self.commitRequest(-1 - i), as: Google_Firestore_V1_CommitResponse.self, on: i)
            }
            print(try await GRDBBaseline.measure("hearth: write one document (gRPC Commit)", clients: clients, duration: duration) { i in
                _ = try await client.unary("Commit", Self.commitRequest(i), as: Google_Firestore_V1_CommitResponse.self, on: i)
            })
            let written = try await engine.runAggregation(
                DatabaseName(project: "demo-hearth", database: "(default)"), Query(collectionId: "grpcbench"),
                [Aggregation(alias: "n", kind: .count(upTo: nil))])
            var n = 1
            if case .integer(let c) = written.values[0].value { n = max(1, Int(c) - 16) }
            print(try await GRDBBaseline.measure("hearth: point get (gRPC GetDocument)", clients: clients, duration: duration) { [n] i in
                var request = Google_Firestore_V1_GetDocumentRequest()
                request.name = "\(Self.database)/documents/grpcbench/g\(1 + abs(i) % n)"
                _ = try await client.unary("GetDocument", request, as: Google_Firestore_V1_Document.self, on: i)
            })
        } catch {
            await client.close()
            throw error
        }
        await client.close()
    }
}
