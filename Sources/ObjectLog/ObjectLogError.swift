import ObjectLogStore

/// An error of the object engine: a code to catch by, and a sentence naming what failed.
///
/// Validation errors name the entity, the object and the property; a failed save may carry
/// several of them in ``errors``.
public struct ObjectLogError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Hashable {
        /// The store's model differs from the code's model.
        case modelMismatch
        /// A value breaks a rule of the model (required, count, deny).
        case validation
        /// Objects share values of a unique attribute group.
        case uniqueness
        /// An object changed in the store since this context loaded it.
        case conflict
        /// The store layer failed.
        case store
        /// Stored bytes cannot be decoded.
        case corrupt
        /// A value cannot be encoded.
        case invalidValue
        /// No object has the given ID.
        case notFound
        /// An argument is not acceptable (for example a reserved metadata key).
        case invalidArgument
        /// The model declares something the engine cannot store.
        case invalidModel
    }

    /// What kind of failure this is.
    public var code: Code
    /// One line saying what failed, naming the object, property and rule where there are some.
    public var message: String
    /// The object concerned, if one.
    public var objectID: ObjectID?
    /// The property concerned, if one.
    public var property: String?
    /// The individual failures when several rules failed in one save.
    public var errors: [ObjectLogError]
    /// The store error underneath, if any.
    public var storeError: StoreError?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        objectID: ObjectID? = nil,
        property: String? = nil,
        errors: [ObjectLogError] = [],
        storeError: StoreError? = nil
    ) {
        self.code = code
        self.message = message
        self.objectID = objectID
        self.property = property
        self.errors = errors
        self.storeError = storeError
    }

    /// The message, followed by the individual failures one per line.
    public var description: String {
        ([message] + errors.map { "  - \($0.message)" }).joined(separator: "\n")
    }

    /// Wraps a store error.
    static func store(_ error: any Error, _ what: String) -> ObjectLogError {
        if let error = error as? ObjectLogError { return error }
        guard let storeError = error as? StoreError else {
            return ObjectLogError(.store, "\(what): \(error)")
        }
        return ObjectLogError(.store, "\(what): \(storeError.description)", storeError: storeError)
    }

    /// Runs a payload decoder, turning its errors into ``Code/corrupt``.
    static func wrapping<T>(_ body: () throws(PayloadError) -> T) throws(ObjectLogError) -> T {
        do {
            return try body()
        } catch {
            throw decoding(error)
        }
    }

    /// The error for a payload that cannot be decoded.
    static func decoding(_ error: PayloadError) -> ObjectLogError {
        ObjectLogError(.corrupt, "cannot decode object payload: \(error)")
    }
}
