import Foundation
import ObjectLogStore

/// An error of the object engine: a code to catch by, and a sentence naming what failed.
///
/// Validation errors name the entity, the object and the property; a failed save may carry
/// several of them in ``errors``. An error that one of your closures threw while the engine
/// ran it (a will-save handler, say) is kept as it was in ``underlyingError``:
///
/// ```swift
/// do {
///     try context.save()
/// } catch let error where error.code == .callbackFailed {
///     if let mine = error.underlyingError as? ImportError { report(mine) }
/// }
/// ```
///
/// The error is a `LocalizedError`, so `localizedDescription` (what most logging and alert
/// code shows) is the message too, not Foundation's "The operation could not be completed".
public struct ObjectLogError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Hashable {
        /// The store's model differs from the code's model.
        case modelMismatch
        /// A value breaks a rule of the model (required, count, deny, an attribute's
        /// ``ValidationRule``), or a `validateFor…` method of the object threw.
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
        /// A class or entity name is not part of the context's model (a fetch of a class the
        /// container was not opened for, say).
        case entityNotInModel
        /// An object is used with a context it does not belong to (inserted into a second
        /// context, or related to an object of another context).
        case contextMismatch
        /// An object is not of the class a typed lookup asked for.
        case typeMismatch
        /// A closure of yours that the engine ran threw; its error is ``underlyingError``.
        case callbackFailed
        /// ``ManagedObject/willSave()`` kept changing, inserting or deleting other objects
        /// round after round, and the save stopped rather than run forever.
        case willSaveLoop
        /// An instance of an abstract entity's own class was inserted: such an entity has
        /// only the objects of its subentities (``ManagedObject/isAbstract``).
        case abstractEntity
        /// The kind of store the container opened cannot do this (compaction on a database
        /// server, say); nothing was changed.
        case unsupported
        /// The history asked for is no longer kept: a compaction folded those transactions
        /// into the live state. Fetch what you need afresh and go on from
        /// ``ManagedObjectContext/currentHistoryToken``.
        case historyExpired
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
    /// The error underneath that is not the store's, as it was thrown: what your will-save
    /// handler, migration stage or `Codable` type threw, for example.
    public var underlyingError: (any Error)?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        objectID: ObjectID? = nil,
        property: String? = nil,
        errors: [ObjectLogError] = [],
        storeError: StoreError? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.objectID = objectID
        self.property = property
        self.errors = errors
        self.storeError = storeError
        self.underlyingError = underlyingError
    }

    /// The message, followed by the individual failures one per line.
    public var description: String {
        ([message] + errors.map { "  - \($0.message)" }).joined(separator: "\n")
    }

    /// The same as ``description``: what `localizedDescription` shows.
    public var errorDescription: String? { description }

    /// The error for a closure of the caller's that threw while the engine ran it: an
    /// ``ObjectLogError`` passes through unchanged, anything else is kept as
    /// ``underlyingError`` under ``Code/callbackFailed``.
    static func callback(_ error: any Error, _ what: String) -> ObjectLogError {
        if let error = error as? ObjectLogError { return error }
        return ObjectLogError(.callbackFailed, "\(what): \(error)", underlyingError: error)
    }

    /// Wraps a store error.
    static func store(_ error: any Error, _ what: String) -> ObjectLogError {
        if let error = error as? ObjectLogError { return error }
        guard let storeError = error as? StoreError else {
            return ObjectLogError(.store, "\(what): \(error)", underlyingError: error)
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

    /// The error for a payload that cannot be decoded, which is kept as ``underlyingError``.
    static func decoding(_ error: PayloadError) -> ObjectLogError {
        ObjectLogError(.corrupt, "cannot decode object payload: \(error)", underlyingError: error)
    }
}
