import Foundation
import HearthFirestoreProto
import SwiftProtobuf

/// The messages of golden.json, built in Swift field by field as scripts/protos/make_golden_fixture.py builds them
/// in Python. Decoding Python's bytes must give exactly these; encoding these must give Python's bytes.
enum GoldenMessages {
    static let database = "projects/demo-hearth/databases/(default)"
    static let documents = database + "/documents"

    typealias Value = Google_Firestore_V1_Value
    typealias FieldTransform = Google_Firestore_V1_DocumentTransform.FieldTransform
    typealias Query = Google_Firestore_V1_StructuredQuery

    static func value(_ kind: Value.OneOf_ValueType) -> Value {
        var value = Value()
        value.valueType = kind
        return value
    }

    static func array(_ values: [Value]) -> Google_Firestore_V1_ArrayValue {
        var array = Google_Firestore_V1_ArrayValue()
        array.values = values
        return array
    }

    static func timestamp(_ seconds: Int64, _ nanos: Int32) -> Google_Protobuf_Timestamp {
        Google_Protobuf_Timestamp(seconds: seconds, nanos: nanos)
    }

    static func field(_ path: String) -> Query.FieldReference {
        var reference = Query.FieldReference()
        reference.fieldPath = path
        return reference
    }

    static func everyValue() -> Value {
        var geo = Google_Type_LatLng()
        geo.latitude = 48.8566
        geo.longitude = 2.3522
        var map = Google_Firestore_V1_MapValue()
        map.fields = ["b": value(.integerValue(2)), "a": value(.booleanValue(false))]
        return value(.arrayValue(array([
            value(.nullValue(.nullValue)),
            value(.booleanValue(true)),
            value(.integerValue(-9_007_199_254_740_993)),
            value(.doubleValue(2.5)),
            value(.timestampValue(timestamp(1_700_000_000, 123_456_000))),
            value(.stringValue("héllo ✓")),
            value(.bytesValue(Data([0x00, 0x01, 0xFE, 0xFF]))),
            value(.referenceValue(documents + "/rooms/r1")),
            value(.geoPointValue(geo)),
            value(.arrayValue(array([value(.integerValue(1)), value(.stringValue("two"))]))),
            value(.mapValue(map)),
        ])))
    }

    static func transform(_ path: String, _ kind: FieldTransform.OneOf_TransformType) -> FieldTransform {
        var transform = FieldTransform()
        transform.fieldPath = path
        transform.transformType = kind
        return transform
    }

    static func commitRequest() -> Google_Firestore_V1_CommitRequest {
        var update = Google_Firestore_V1_Write()
        var document = Google_Firestore_V1_Document()
        document.name = documents + "/rooms/r1"
        document.fields = ["title": value(.stringValue("Lobby")), "size": value(.integerValue(3))]
        update.update = document
        update.updateMask.fieldPaths = ["title", "size"]
        update.updateTransforms = [
            transform("visits", .increment(value(.integerValue(1)))),
            transform("updatedAt", .setToServerValue(.requestTime)),
            transform("tags", .appendMissingElements(array([value(.stringValue("new"))]))),
        ]
        update.currentDocument.exists = true

        var delete = Google_Firestore_V1_Write()
        delete.delete = documents + "/rooms/r2"
        delete.currentDocument.updateTime = timestamp(1_700_000_001, 5)

        var transformWrite = Google_Firestore_V1_Write()
        var documentTransform = Google_Firestore_V1_DocumentTransform()
        documentTransform.document = documents + "/rooms/r3"
        documentTransform.fieldTransforms = [
            transform("high", .maximum(value(.doubleValue(9.5)))),
            transform("old", .removeAllFromArray(array([value(.nullValue(.nullValue))]))),
        ]
        transformWrite.transform = documentTransform

        var request = Google_Firestore_V1_CommitRequest()
        request.database = database
        request.writes = [update, delete, transformWrite]
        request.transaction = Data("txn-".utf8) + Data([0x01, 0x02])
        return request
    }

    static func listenRequest() -> Google_Firestore_V1_ListenRequest {
        var collection = Query.CollectionSelector()
        collection.collectionID = "rooms"
        var order = Query.Order()
        order.field = field("__name__")
        order.direction = .ascending
        var query = Query()
        query.from = [collection]
        query.orderBy = [order]
        query.limit = Google_Protobuf_Int32Value(3)

        var queryTarget = Google_Firestore_V1_Target.QueryTarget()
        queryTarget.parent = documents
        queryTarget.structuredQuery = query
        var target = Google_Firestore_V1_Target()
        target.query = queryTarget
        target.resumeToken = Data([0x0A, 0x0B]) + Data("resume".utf8)
        target.targetID = 20601
        target.expectedCount = Google_Protobuf_Int32Value(2)

        var request = Google_Firestore_V1_ListenRequest()
        request.database = database
        request.addTarget = target
        request.labels = ["goog-listen-tags": "realtime", "a-label": "x"]
        return request
    }

    static func filter(_ kind: Query.Filter.OneOf_FilterType) -> Query.Filter {
        var filter = Query.Filter()
        filter.filterType = kind
        return filter
    }

    static func fieldFilter(_ path: String, _ op: Query.FieldFilter.Operator, _ value: Value) -> Query.Filter {
        var fieldFilter = Query.FieldFilter()
        fieldFilter.field = field(path)
        fieldFilter.op = op
        fieldFilter.value = value
        return filter(.fieldFilter(fieldFilter))
    }

    static func composite(_ op: Query.CompositeFilter.Operator, _ filters: [Query.Filter]) -> Query.Filter {
        var composite = Query.CompositeFilter()
        composite.op = op
        composite.filters = filters
        return filter(.compositeFilter(composite))
    }

    static func runQueryRequest() -> Google_Firestore_V1_RunQueryRequest {
        var isNull = Query.UnaryFilter()
        isNull.op = .isNull
        isNull.field = field("deletedAt")

        var collection = Query.CollectionSelector()
        collection.collectionID = "messages"
        collection.allDescendants = true
        var byScore = Query.Order()
        byScore.field = field("score")
        byScore.direction = .descending
        var byName = Query.Order()
        byName.field = field("__name__")
        byName.direction = .descending
        var startAt = Google_Firestore_V1_Cursor()
        startAt.values = [value(.integerValue(42)), value(.referenceValue(documents + "/rooms/r1/messages/m9"))]
        startAt.before = true
        var endAt = Google_Firestore_V1_Cursor()
        endAt.values = [value(.integerValue(10))]

        var query = Query()
        query.select.fields = [field("title")]
        query.from = [collection]
        query.`where` = composite(.and, [
            fieldFilter("score", .greaterThanOrEqual, value(.integerValue(10))),
            composite(.or, [
                fieldFilter("tag", .in, value(.arrayValue(array([value(.stringValue("a")), value(.stringValue("b"))])))),
                filter(.unaryFilter(isNull)),
            ]),
        ])
        query.orderBy = [byScore, byName]
        query.startAt = startAt
        query.endAt = endAt
        query.offset = 1
        query.limit = Google_Protobuf_Int32Value(20)

        var request = Google_Firestore_V1_RunQueryRequest()
        request.parent = documents + "/rooms/r1"
        request.structuredQuery = query
        request.readTime = timestamp(1_700_000_002, 999_999_999)
        return request
    }
}
