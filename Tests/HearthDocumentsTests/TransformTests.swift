import HearthCore
import HearthDocuments
import Testing

/// Firestore's field transforms with its numeric rules (see FieldTransform in firestore/v1/write.proto).
@Suite("Field transforms")
struct TransformTests {
    struct NumericCase: Sendable, CustomTestStringConvertible {
        var name: String
        var stored: Value?
        var operation: FieldTransform.Operation
        var expected: Value
        var testDescription: String { name }
    }

    static let numericCases: [NumericCase] = [
        // increment
        NumericCase(name: "int + int stays int", stored: .integer(5), operation: .increment(.integer(3)), expected: .integer(8)),
        NumericCase(name: "int + double is double", stored: .integer(5), operation: .increment(.double(0.5)), expected: .double(5.5)),
        NumericCase(name: "double + int is double", stored: .double(1.5), operation: .increment(.integer(1)), expected: .double(2.5)),
        NumericCase(name: "double + double", stored: .double(0.25), operation: .increment(.double(0.5)), expected: .double(0.75)),
        NumericCase(name: "int + 0.0 becomes double", stored: .integer(2), operation: .increment(.double(0)), expected: .double(2)),
        NumericCase(name: "overflow saturates at Int64.max", stored: .integer(.max - 1), operation: .increment(.integer(5)), expected: .integer(.max)),
        NumericCase(name: "underflow saturates at Int64.min", stored: .integer(.min + 1), operation: .increment(.integer(-5)), expected: .integer(.min)),
        NumericCase(name: "reaching max exactly", stored: .integer(.max - 1), operation: .increment(.integer(1)), expected: .integer(.max)),
        NumericCase(name: "missing field takes the operand", stored: nil, operation: .increment(.integer(7)), expected: .integer(7)),
        NumericCase(name: "non-number field takes the operand", stored: .string("x"), operation: .increment(.double(1.5)), expected: .double(1.5)),
        NumericCase(name: "NaN + 1 is NaN", stored: .double(.nan), operation: .increment(.integer(1)), expected: .double(.nan)),
        // maximum
        NumericCase(name: "max int vs bigger double takes the double", stored: .integer(3), operation: .maximum(.double(3.5)), expected: .double(3.5)),
        NumericCase(name: "max int vs smaller double keeps the int", stored: .integer(3), operation: .maximum(.double(2.5)), expected: .integer(3)),
        NumericCase(name: "max double vs bigger int takes the int", stored: .double(2.5), operation: .maximum(.integer(3)), expected: .integer(3)),
        NumericCase(name: "max of equivalent 3 and 3.0 keeps the stored int", stored: .integer(3), operation: .maximum(.double(3)), expected: .integer(3)),
        NumericCase(name: "max of equivalent 3.0 and 3 keeps the stored double", stored: .double(3), operation: .maximum(.integer(3)), expected: .double(3)),
        NumericCase(name: "max of stored -0.0 and 0 keeps -0.0", stored: .double(-0.0), operation: .maximum(.integer(0)), expected: .double(-0.0)),
        NumericCase(name: "max with NaN operand is NaN", stored: .integer(5), operation: .maximum(.double(.nan)), expected: .double(.nan)),
        NumericCase(name: "max with NaN stored is NaN", stored: .double(.nan), operation: .maximum(.integer(5)), expected: .double(.nan)),
        NumericCase(name: "max on missing takes operand", stored: nil, operation: .maximum(.integer(-4)), expected: .integer(-4)),
        NumericCase(name: "max on a string takes operand", stored: .string("9"), operation: .maximum(.integer(1)), expected: .integer(1)),
        NumericCase(name: "max at int64 edge vs 2^63 double", stored: .integer(.max), operation: .maximum(.double(9.223372036854775807e18)), expected: .double(9.223372036854775807e18)),
        NumericCase(name: "max 2^53+1 vs 2^53 double keeps the int", stored: .integer((1 << 53) + 1), operation: .maximum(.double(9_007_199_254_740_992)), expected: .integer((1 << 53) + 1)),
        // minimum
        NumericCase(name: "min int vs smaller double takes the double", stored: .integer(3), operation: .minimum(.double(2.5)), expected: .double(2.5)),
        NumericCase(name: "min int vs bigger double keeps the int", stored: .integer(3), operation: .minimum(.double(3.5)), expected: .integer(3)),
        NumericCase(name: "min of equivalent 3 and 3.0 keeps the stored int", stored: .integer(3), operation: .minimum(.double(3)), expected: .integer(3)),
        NumericCase(name: "min of stored 0 and -0.0 keeps 0", stored: .integer(0), operation: .minimum(.double(-0.0)), expected: .integer(0)),
        NumericCase(name: "min with NaN operand is NaN", stored: .integer(5), operation: .minimum(.double(.nan)), expected: .double(.nan)),
        NumericCase(name: "min with NaN stored is NaN", stored: .double(.nan), operation: .minimum(.integer(-5)), expected: .double(.nan)),
        NumericCase(name: "min on missing takes operand", stored: nil, operation: .minimum(.double(1.5)), expected: .double(1.5)),
        NumericCase(name: "min on null takes operand", stored: .null, operation: .minimum(.integer(2)), expected: .integer(2)),
    ]

    @Test("Numeric transforms follow Firestore's rules", arguments: Backend.allCases, numericCases)
    func numeric(_ backend: Backend, _ c: NumericCase) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/d", c.stored.map { ["n": $0] } ?? [:])
            let result = try await db.transform("c/d", [("n", c.operation)])
            expectIdentical(try await db.value("c/d", "n"), c.expected)
            #expect(result.transformResults.count == 1)
            expectIdentical(result.transformResults.first, c.expected)
        }
    }

    @Test("serverTimestamp writes the commit time (to the millisecond) and returns it", arguments: Backend.allCases)
    func serverTimestamp(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let r = try await db.commit([
                Write(
                    path: path("c/d"), kind: .update(fields: ["a": .integer(1)], mask: nil),
                    transforms: [
                        FieldTransform(field: field("t"), operation: .serverTimestamp),
                        FieldTransform(field: field("m.n"), operation: .increment(.integer(2))),
                        FieldTransform(field: field("arr"), operation: .appendMissingElements([.integer(1)])),
                    ])
            ])
            let w = r.writeResults[0]
            // REQUEST_TIME has millisecond precision (google.firestore.v1.DocumentTransform.FieldTransform.ServerValue).
            let requestTime = Timestamp(seconds: r.commitTime.seconds, nanos: r.commitTime.nanos - r.commitTime.nanos % 1_000_000)
            #expect(w.transformResults.count == 3)
            #expect(w.transformResults[0] == .timestamp(requestTime))
            expectIdentical(w.transformResults[1], .integer(2))
            #expect(w.transformResults[2] == .null)
            let fields = try #require(try await db.fields("c/d"))
            #expect(fields["t"] == .timestamp(requestTime))
            #expect(fields["a"] == .integer(1))
            #expect(fields["m"] == .map(["n": .integer(2)]))
            #expect(fields["arr"] == .array([.integer(1)]))
        }
    }

    @Test("appendMissingElements: 3 and 3.0 are one element, NaN equals NaN, null equals null, input duplicates collapse", arguments: Backend.allCases)
    func appendMissing(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/d", ["a": .array([.integer(3), .string("x"), .double(.nan), .null])])
            try await db.transform("c/d", [("a", .appendMissingElements([.double(3), .integer(4), .double(4), .double(.nan), .null, .string("x"), .string("y"), .integer(4)]))])
            let a = try #require(try await db.value("c/d", "a")?.arrayValue)
            #expect(a.count == 6)
            expectIdentical(.array(a), .array([.integer(3), .string("x"), .double(.nan), .null, .integer(4), .string("y")]))
            // On a missing field or a non-array, start from an empty array.
            try await db.transform("c/d", [("missing", .appendMissingElements([.integer(1), .integer(1)])), ("s", .appendMissingElements([.boolean(true)]))])
            expectIdentical(try await db.value("c/d", "missing"), .array([.integer(1)]))
            expectIdentical(try await db.value("c/d", "s"), .array([.boolean(true)]))
        }
    }

    @Test("removeAllFromArray removes every equivalent element", arguments: Backend.allCases)
    func removeAll(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/d", [
                "a": .array([.integer(3), .double(3), .string("3"), .null, .double(.nan), .integer(4), .integer(3), .map(["k": .integer(1)])]),
                "s": .string("not an array"),
            ])
            try await db.transform("c/d", [("a", .removeAllFromArray([.double(3), .null, .double(.nan), .map(["k": .double(1)])])), ("s", .removeAllFromArray([.integer(1)])), ("none", .removeAllFromArray([.integer(1)]))])
            expectIdentical(try await db.value("c/d", "a"), .array([.string("3"), .integer(4)]))
            expectIdentical(try await db.value("c/d", "s"), .array([]))
            expectIdentical(try await db.value("c/d", "none"), .array([]))
        }
    }

    @Test("A transform-only write on a missing document creates it; update() with a transform needs it to exist", arguments: Backend.allCases)
    func transformCreates(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.transform("c/new", [("n", .increment(.integer(1)))])
            #expect(try await db.fields("c/new") == ["n": .integer(1)])
            await expectError(.notFound) {
                try await db.commit([Write(path: path("c/none"), kind: .transform, transforms: [FieldTransform(field: field("n"), operation: .increment(.integer(1)))], precondition: .exists(true))])
            }
            #expect(try await db.get("c/none") == nil)
        }
    }

    @Test("Transforms in one commit see the earlier writes of that commit", arguments: Backend.allCases)
    func sequentialInCommit(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let inc = Write(path: path("c/d"), kind: .transform, transforms: [FieldTransform(field: field("n"), operation: .increment(.integer(1)))])
            let r = try await db.commit([.set(path("c/d"), ["n": .integer(10)]), inc, inc])
            expectIdentical(r.writeResults[2].transformResults.first, .integer(12))
            expectIdentical(try await db.value("c/d", "n"), .integer(12))
        }
    }

    @Test("A transform that changes nothing keeps the update time", arguments: Backend.allCases)
    func noOpTransform(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let first = try await db.set("c/d", ["n": .integer(5), "a": .array([.integer(1)])])
            let r = try await db.transform("c/d", [("n", .maximum(.integer(1))), ("a", .appendMissingElements([.double(1)]))])
            #expect(r.updateTime == first.commitTime)
            #expect(try await db.get("c/d")?.updateTime == first.commitTime)
        }
    }
}
