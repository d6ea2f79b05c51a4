import HearthCore
import Testing

@Suite("Vector values")
struct VectorTests {
    static let vector = Value.map(["__type__": .string("__vector__"), "value": .array([.double(1), .double(2)])])

    @Test("Exactly {__type__: __vector__, value: [...]} is a vector")
    func recognised() {
        #expect(Self.vector.isVector)
        #expect(Self.vector.typeOrder == .vector)
    }

    @Test("A vector-shaped map with any other key is an ordinary map, indexed and ordered as one")
    func extraKeysMakeAMap() {
        guard case .map(var m) = Self.vector else { Issue.record("not a map"); return }
        m["x"] = .integer(1)
        let map = Value.map(m)
        #expect(!map.isVector)
        #expect(map.typeOrder == .map)
        #expect(ValueOrdering.compare(Self.vector, map) < 0)
        #expect(IndexKey.encode(Self.vector).lexicographicallyPrecedes(IndexKey.encode(map)))
    }
}
