import GRPCCore
import HearthFirestoreProto
import SwiftProtobuf
import Testing

/// The generated `google.firestore.v1.Firestore` service against the RPC list of google-cloud-firestore's gRPC
/// transport (golden.json `methods`): names, message types and streaming kinds.
@Suite struct ServiceShapeTests {
    typealias Firestore = Google_Firestore_V1_Firestore
    typealias Method = GoldenFixture.Method

    /// What the generated code says about each RPC: the descriptor, the message types, and the streaming kind read
    /// off the signature of the `SimpleServiceProtocol` requirement (see `StreamingKind`).
    static func generated<S: Firestore.SimpleServiceProtocol>(_: S.Type) -> [Method] {
        func method<I: SwiftProtobuf.Message, O: SwiftProtobuf.Message>(
            _ descriptor: MethodDescriptor, _: I.Type, _: O.Type, _ kind: StreamingKind
        ) -> Method {
            Method(
                name: descriptor.method, input: I.protoMessageName, output: O.protoMessageName,
                clientStreaming: kind.clientStreaming, serverStreaming: kind.serverStreaming)
        }
        typealias M = Firestore.Method
        return [
            method(M.BatchGetDocuments.descriptor, M.BatchGetDocuments.Input.self, M.BatchGetDocuments.Output.self,
                   .of(S.batchGetDocuments(request:response:context:))),
            method(M.BatchWrite.descriptor, M.BatchWrite.Input.self, M.BatchWrite.Output.self,
                   .of(S.batchWrite(request:context:))),
            method(M.BeginTransaction.descriptor, M.BeginTransaction.Input.self, M.BeginTransaction.Output.self,
                   .of(S.beginTransaction(request:context:))),
            method(M.Commit.descriptor, M.Commit.Input.self, M.Commit.Output.self, .of(S.commit(request:context:))),
            method(M.CreateDocument.descriptor, M.CreateDocument.Input.self, M.CreateDocument.Output.self,
                   .of(S.createDocument(request:context:))),
            method(M.DeleteDocument.descriptor, M.DeleteDocument.Input.self, M.DeleteDocument.Output.self,
                   .of(S.deleteDocument(request:context:))),
            method(M.ExecutePipeline.descriptor, M.ExecutePipeline.Input.self, M.ExecutePipeline.Output.self,
                   .of(S.executePipeline(request:response:context:))),
            method(M.GetDocument.descriptor, M.GetDocument.Input.self, M.GetDocument.Output.self,
                   .of(S.getDocument(request:context:))),
            method(M.ListCollectionIds.descriptor, M.ListCollectionIds.Input.self, M.ListCollectionIds.Output.self,
                   .of(S.listCollectionIds(request:context:))),
            method(M.ListDocuments.descriptor, M.ListDocuments.Input.self, M.ListDocuments.Output.self,
                   .of(S.listDocuments(request:context:))),
            method(M.Listen.descriptor, M.Listen.Input.self, M.Listen.Output.self,
                   .of(S.listen(request:response:context:))),
            method(M.PartitionQuery.descriptor, M.PartitionQuery.Input.self, M.PartitionQuery.Output.self,
                   .of(S.partitionQuery(request:context:))),
            method(M.Rollback.descriptor, M.Rollback.Input.self, M.Rollback.Output.self,
                   .of(S.rollback(request:context:))),
            method(M.RunAggregationQuery.descriptor, M.RunAggregationQuery.Input.self,
                   M.RunAggregationQuery.Output.self, .of(S.runAggregationQuery(request:response:context:))),
            method(M.RunQuery.descriptor, M.RunQuery.Input.self, M.RunQuery.Output.self,
                   .of(S.runQuery(request:response:context:))),
            method(M.UpdateDocument.descriptor, M.UpdateDocument.Input.self, M.UpdateDocument.Output.self,
                   .of(S.updateDocument(request:context:))),
            method(M.Write.descriptor, M.Write.Input.self, M.Write.Output.self,
                   .of(S.write(request:response:context:))),
        ]
    }

    @Test func everyTransportRPCIsGeneratedWithItsTypesAndStreamingKind() {
        let expected = GoldenFixture.shared.methods
        let generated = Self.generated(ProbeFirestore.self)
        #expect(generated.map(\.name) == expected.map(\.name))
        for (mine, theirs) in zip(generated, expected) {
            #expect(mine == theirs)
        }
        #expect(expected.count == 17)
    }

    @Test func descriptorsNameTheService() {
        #expect(Firestore.descriptor.fullyQualifiedService == "google.firestore.v1.Firestore")
        let names = Firestore.Method.descriptors.map(\.fullyQualifiedMethod).sorted()
        #expect(names == GoldenFixture.shared.methods.map { "google.firestore.v1.Firestore/\($0.name)" }.sorted())
        #expect(Set(Firestore.Method.descriptors.map(\.service)) == [Firestore.descriptor])
    }

    @Test func streamingKindsOfTheRealtimeRPCs() {
        let kinds = Dictionary(
            uniqueKeysWithValues: Self.generated(ProbeFirestore.self).map {
                ($0.name, StreamingKind(clientStreaming: $0.clientStreaming, serverStreaming: $0.serverStreaming))
            })
        #expect(kinds["Listen"] == .bidirectional)
        #expect(kinds["Write"] == .bidirectional)
        #expect(kinds["RunQuery"] == .serverStreaming)
        #expect(kinds["RunAggregationQuery"] == .serverStreaming)
        #expect(kinds["BatchGetDocuments"] == .serverStreaming)
        #expect(kinds["Commit"] == .unary)
    }
}
