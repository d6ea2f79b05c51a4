import Foundation
import HearthFirestoreProto
import SwiftProtobuf
import Testing

/// The generated messages against bytes serialised by the official google-cloud-firestore package (golden.json).
@Suite struct GoldenBytesTests {
    static let deterministic: BinaryEncodingOptions = {
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        return options
    }()

    /// Decode Python's bytes, compare with the message built in Swift, re-encode, compare bytes; then encode the
    /// Swift-built message and compare with Python's bytes (the reverse direction).
    func roundTrip<M: SwiftProtobuf.Message & Equatable>(_ name: String, _ expected: M) throws -> M {
        let golden = try GoldenFixture.bytes(name)
        let decoded = try M(serializedBytes: golden)
        #expect(decoded == expected)
        #expect(decoded.unknownFields.data.isEmpty, "fields the generated \(M.self) does not know")
        let reencoded: Data = try decoded.serializedBytes(options: Self.deterministic)
        #expect(reencoded == golden)
        let swiftEncoded: Data = try expected.serializedBytes(options: Self.deterministic)
        #expect(swiftEncoded == golden)
        return decoded
    }

    @Test func fixtureNamesTheMessageTypes() {
        let types = Dictionary(uniqueKeysWithValues: GoldenFixture.shared.messages.map { ($0.name, $0.type) })
        #expect(types["commitRequest"] == Google_Firestore_V1_CommitRequest.protoMessageName)
        #expect(types["listenRequest"] == Google_Firestore_V1_ListenRequest.protoMessageName)
        #expect(types["runQueryRequest"] == Google_Firestore_V1_RunQueryRequest.protoMessageName)
        #expect(types["everyValue"] == Google_Firestore_V1_Value.protoMessageName)
    }

    @Test func commitRequest() throws {
        let request = try roundTrip("commitRequest", GoldenMessages.commitRequest())
        #expect(request.database == "projects/demo-hearth/databases/(default)")
        try #require(request.writes.count == 3)
        let update = request.writes[0]
        #expect(update.update.fields["title"]?.stringValue == "Lobby")
        #expect(update.update.fields["size"]?.integerValue == 3)
        #expect(update.updateMask.fieldPaths == ["title", "size"])
        #expect(update.updateTransforms.map(\.fieldPath) == ["visits", "updatedAt", "tags"])
        #expect(update.updateTransforms[0].increment.integerValue == 1)
        #expect(update.updateTransforms[1].setToServerValue == .requestTime)
        #expect(update.updateTransforms[2].appendMissingElements.values.map(\.stringValue) == ["new"])
        #expect(update.currentDocument.conditionType == .exists(true))
        guard case .delete(let deleted) = request.writes[1].operation else {
            Issue.record("second write is not a delete: \(String(describing: request.writes[1].operation))")
            return
        }
        #expect(deleted.hasSuffix("/documents/rooms/r2"))
        #expect(request.writes[1].currentDocument.updateTime == Google_Protobuf_Timestamp(seconds: 1_700_000_001, nanos: 5))
        #expect(request.writes[2].transform.fieldTransforms.map(\.fieldPath) == ["high", "old"])
        #expect(request.writes[2].transform.fieldTransforms[0].maximum.doubleValue == 9.5)
        #expect(request.transaction == Data([0x74, 0x78, 0x6E, 0x2D, 0x01, 0x02]))
    }

    @Test func listenRequest() throws {
        let request = try roundTrip("listenRequest", GoldenMessages.listenRequest())
        guard case .addTarget(let target) = request.targetChange else {
            Issue.record("no add_target: \(String(describing: request.targetChange))")
            return
        }
        #expect(target.targetID == 20601)
        #expect(target.resumeType == .resumeToken(Data([0x0A, 0x0B]) + Data("resume".utf8)))
        #expect(target.expectedCount.value == 2)
        #expect(target.once == false)
        #expect(target.query.parent == "projects/demo-hearth/databases/(default)/documents")
        #expect(target.query.structuredQuery.from.map(\.collectionID) == ["rooms"])
        #expect(target.query.structuredQuery.orderBy.first?.direction == .ascending)
        #expect(target.query.structuredQuery.limit.value == 3)
        #expect(request.labels == ["goog-listen-tags": "realtime", "a-label": "x"])
    }

    @Test func runQueryRequest() throws {
        let request = try roundTrip("runQueryRequest", GoldenMessages.runQueryRequest())
        let query = request.structuredQuery
        #expect(query.select.fields.map(\.fieldPath) == ["title"])
        #expect(query.from.first?.collectionID == "messages")
        #expect(query.from.first?.allDescendants == true)
        #expect(query.`where`.compositeFilter.op == .and)
        try #require(query.`where`.compositeFilter.filters.count == 2)
        let score = query.`where`.compositeFilter.filters[0].fieldFilter
        #expect(score.field.fieldPath == "score")
        #expect(score.op == .greaterThanOrEqual)
        #expect(score.value.integerValue == 10)
        let or = query.`where`.compositeFilter.filters[1].compositeFilter
        #expect(or.op == .or)
        #expect(or.filters.first?.fieldFilter.op == .in)
        #expect(or.filters.last?.unaryFilter.op == .isNull)
        #expect(or.filters.last?.unaryFilter.field.fieldPath == "deletedAt")
        #expect(query.orderBy.map(\.direction) == [.descending, .descending])
        #expect(query.startAt.before == true)
        #expect(query.startAt.values.map(\.integerValue) == [42, 0])
        #expect(query.endAt.before == false)
        #expect(query.offset == 1)
        #expect(query.limit.value == 20)
        #expect(request.consistencySelector == .readTime(Google_Protobuf_Timestamp(seconds: 1_700_000_002, nanos: 999_999_999)))
    }

    @Test func valueOfEveryKind() throws {
        let value = try roundTrip("everyValue", GoldenMessages.everyValue())
        let kinds = value.arrayValue.values.map { value -> String in
            switch value.valueType {
            case .nullValue: "null"
            case .booleanValue: "boolean"
            case .integerValue: "integer"
            case .doubleValue: "double"
            case .timestampValue: "timestamp"
            case .stringValue: "string"
            case .bytesValue: "bytes"
            case .referenceValue: "reference"
            case .geoPointValue: "geoPoint"
            case .arrayValue: "array"
            case .mapValue: "map"
            case .fieldReferenceValue: "fieldReference"
            case .variableReferenceValue: "variableReference"
            case .functionValue: "function"
            case .pipelineValue: "pipeline"
            case nil: "unset"
            }
        }
        #expect(kinds == ["null", "boolean", "integer", "double", "timestamp", "string", "bytes", "reference",
                          "geoPoint", "array", "map"])
        let values = value.arrayValue.values
        #expect(values[2].integerValue == -9_007_199_254_740_993)
        #expect(values[4].timestampValue == Google_Protobuf_Timestamp(seconds: 1_700_000_000, nanos: 123_456_000))
        #expect(values[5].stringValue == "héllo ✓")
        #expect(values[6].bytesValue == Data([0x00, 0x01, 0xFE, 0xFF]))
        #expect(values[8].geoPointValue.latitude == 48.8566)
        #expect(values[10].mapValue.fields["a"]?.valueType == .booleanValue(false))
    }
}
