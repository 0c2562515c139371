import Foundation
import ObjectLogStore
import Observation

/// The base class of every entity: a Swift class whose stored properties are declared with
/// ``Attribute`` and ``Relationship``.
///
/// Subclasses provide default values for all their properties so that the inherited `init()`
/// works; the engine calls it to create fetched objects, for large fetches on two threads at
/// once (and a context holding many objects releases them on two threads when it goes away). Reads and writes of wrapped properties
/// go through the object's ``managedObjectContext``, which loads faults on first access and
/// records changes.
///
/// ```swift
/// final class Configuration: ManagedObject {
///     @Attribute(.unique) var name = ""
///     @Attribute var feed: Double = 0.055
///     @Relationship(inverse: \Snapshot.configuration, deleteRule: .cascade)
///     var snapshots: Set<Snapshot>
/// }
/// ```
///
/// Managed objects are not `Sendable`: use them only in the isolation domain of their context,
/// and pass ``objectID`` between contexts.
///
/// Managed objects are `Observable`: in a context whose
/// ``ManagedObjectContext/objectsAreObservable`` is true, `withObservationTracking` and
/// `Observations` see their properties change (see <doc:TrackingChanges>).
///
/// ## When the context is gone
///
/// A context does not keep itself alive: when the last reference to it goes, its objects are
/// left without one (``managedObjectContext`` is `nil`). They can still be read (a fault loads
/// its values from the store), but they cannot be changed: a change could never be saved, as
/// no context records it. Setting a property of such an object stops the program with a
/// message naming the entity, the property and the object (with `fatalError`, so release
/// builds print it too), rather than changing the object in memory only:
///
/// ```swift
/// func firstRecipe() throws -> Recipe? {
///     let context = container.newContext()
///     return try context.fetch(Recipe.self).first
/// }
/// let recipe = try firstRecipe()
/// print(recipe?.title ?? "")     // fine: loads from the store
/// recipe?.title = "Soup"         // stops: "Recipe.title of Recipe#4 was set after …"
/// ```
///
/// Keep the context for as long as you change its objects, or look the object up by its
/// ``objectID`` in a context that is alive. (Keeping the context alive from its changed
/// objects, the other way out, would make every context with unsaved changes that nothing
/// references a leak; Core Data does not do it either.) Objects that leave a context that is
/// still alive, through ``ManagedObjectContext/reset()`` or a ``ManagedObjectContext/rollback()``
/// of their insertion, are plain objects again and can be changed and inserted anew.
open class ManagedObject: Hashable, CustomStringConvertible {
    // The engine's bookkeeping properties below are marked `@exclusivity(unchecked)`: they are
    // touched for every object of every insert, fetch and save, where the runtime's dynamic
    // exclusivity check (a call at the start and the end of each access, which searches and
    // updates the thread's list of open accesses) costs more than the work itself. Only the
    // engine accesses them, never through long-lived `inout` accesses, and an object is used
    // only in its context's isolation domain.
    /// The context the object is registered in; `nil` before insertion or after reset.
    public internal(set) var managedObjectContext: ManagedObjectContext? {
        get { contextLink?.context }
        // An object that leaves its context keeps its coordinator, to load its values.
        set { contextLink = newValue?.link ?? contextLink?.detached }
    }
    /// The link to the context (shared by all its objects), which the context clears when it
    /// goes away.
    ///
    /// Not a `weak` reference: a weakly referenced object gets a side table, and then every
    /// retain and release of it takes the runtime's slow path. The context is retained and
    /// released for every object inserted, fetched or saved, so it would take that slow path
    /// for every one of them.
    @exclusivity(unchecked) var contextLink: ContextLink?
    /// The object's key in the store; 0 until it is inserted.
    @exclusivity(unchecked) var key: ObjectKey = 0
    /// The entity, known once the object is registered.
    ///
    /// Not retained: an object with an entity has a ``contextLink``, whose coordinator holds
    /// the model and so the entity, for as long as the object lives (the engine's own scratch
    /// objects without a link live only while their context does). Not retaining it saves two
    /// atomic operations on one shared object per fetched object, which two threads making
    /// faults would otherwise contend for. Reading this property still retains the entity for
    /// as long as the caller uses it; loops over many objects, which may run on two threads,
    /// use ``unretainedEntity`` or ``hasEntity(_:)``, which do not.
    var entity: EntityDescription? {
        get { entityReference?.takeUnretainedValue() }
        set { entityReference = newValue.map { Unmanaged.passUnretained($0) } }
    }
    /// The entity's reference, as stored.
    ///
    /// An `Unmanaged` rather than an `unowned(unsafe)` property: reading an optional
    /// `unowned(unsafe)` reference made a strong copy, a retain and a release of the entity for
    /// every object a loop looked at, on one cache line that the two threads of a parallel
    /// fetch or save then fought over.
    @exclusivity(unchecked) private var entityReference: Unmanaged<EntityDescription>?
    /// ``entity`` without retaining it, for loops over many objects while the model is alive.
    final var unretainedEntity: Unmanaged<EntityDescription>? { entityReference }
    /// Whether the object's entity is `entity`: a comparison of references that retains
    /// neither.
    @inline(__always)
    final func hasEntity(_ entity: EntityDescription) -> Bool {
        entityReference?.toOpaque() == Unmanaged.passUnretained(entity).toOpaque()
    }
    /// Bits checked on every property access; 0 means "plain read and write".
    @usableFromInline
    @exclusivity(unchecked) final var accessState: AccessState = []
    /// Lifecycle bits.
    @exclusivity(unchecked) var lifecycle: Lifecycle = []
    /// The low 32 bits of the file generation ``loadedRecordOffset`` and
    /// ``recordOffsetBound`` refer to (compaction moves records; the coordinator translates
    /// older offsets, and restores the high bits from the current generation, see
    /// ``PersistentStoreCoordinator/LockCheck``).
    ///
    /// 32 bits and declared here, beside the two 1-byte fields above, so that the three share
    /// one 8-byte word: every object is 8 bytes smaller (a five-attribute entity's instances
    /// fit 128-byte heap blocks instead of 144-byte ones).
    @exclusivity(unchecked) var loadedGeneration: UInt32 = 0
    /// Offset of the record this object's values were loaded from (optimistic locking); 0
    /// when only ``recordOffsetBound`` is known.
    var loadedRecordOffset: UInt64 {
        get { loadStamp & Self.boundFlag == 0 ? loadStamp : 0 }
        set {
            if newValue != 0 {
                loadStamp = newValue
            } else if loadStamp & Self.boundFlag == 0 {
                loadStamp = 0
            }
        }
    }
    /// When the exact offset is not known: the values are from a record older than this
    /// offset (a save's commit offset, or the log's end before a scan); else 0.
    var recordOffsetBound: UInt64 {
        get { loadStamp & Self.boundFlag != 0 ? loadStamp & ~Self.boundFlag : 0 }
        set {
            if newValue != 0 {
                loadStamp = newValue | Self.boundFlag
            } else if loadStamp & Self.boundFlag != 0 {
                loadStamp = 0
            }
        }
    }
    /// ``loadedRecordOffset`` or ``recordOffsetBound``, whichever is known (never both; the
    /// engine sets the two together), with ``boundFlag`` set for a bound.
    ///
    /// One field instead of two makes every object 8 bytes smaller, which puts the instances
    /// of a five-attribute entity (Int, String, Double, Int, Date: 120 bytes) in 128-byte heap
    /// blocks rather than 144-byte ones. File offsets stay below 2^63.
    @exclusivity(unchecked) private var loadStamp: UInt64 = 0
    private static let boundFlag: UInt64 = 1 << 63
    /// What loads the object's values when its context is gone: the coordinator of the
    /// context it was last registered in, held by the link (see ``ContextLink``).
    var coordinator: PersistentStoreCoordinator? { contextLink?.coordinator }
    /// The encoded values as they were before the first unsaved change; nil without one.
    ///
    /// Used by ``ManagedObjectContext/changedValues(of:)`` and refreshes. The bytes lie in
    /// the snapshot buffer of the context the object is registered in, which alone can read
    /// them.
    var snapshot: [UInt8]? {
        get { snapshotSpan == 0 ? nil : managedObjectContext?.snapshotBytes(snapshotSpan) }
        set {
            if let newValue, let context = managedObjectContext {
                snapshotSpan = context.storeSnapshot(newValue)
            } else {
                snapshotSpan = 0
            }
        }
    }
    /// Where ``snapshot`` lies in the context's snapshot buffer; 0 without one.
    ///
    /// A span in a buffer of the context rather than an array per object: an array would be a
    /// heap allocation, a free and their reference counting for every object a bulk update
    /// changes (see ``ManagedObjectContext/snapshotSpan(offset:count:)`` for the packing).
    @exclusivity(unchecked) var snapshotSpan: UInt64 = 0
    /// State few objects ever need, kept out of line so that every object is smaller and
    /// cheaper to create and free (a million fetched objects pay for each byte and field).
    private var extras: Extras?

    private final class Extras {
        var probe: Probe?
        var loadError: ObjectLogError?
        var detachedExternal: [Int: BlobID] = [:]
        var pendingExternal = PropertyIndexSet()
        var observationRegistrar: ObservationRegistrar?
    }

    /// Set while the model is probing an inverse key path.
    var probe: Probe? {
        get { extras?.probe }
        set { if newValue != nil || extras != nil { extrasForWriting().probe = newValue } }
    }
    /// The error of the last load of this object's values that failed, until
    /// ``fulfillFault()`` reports it.
    var loadError: ObjectLogError? {
        get { extras?.loadError }
        set { if newValue != nil || extras != nil { extrasForWriting().loadError = newValue } }
    }
    /// Blobs of unread external data, by property index, once the context that knew them is
    /// gone.
    var detachedExternal: [Int: BlobID] {
        get { extras?.detachedExternal ?? [:] }
        set {
            if !newValue.isEmpty || extras != nil { extrasForWriting().detachedExternal = newValue }
        }
    }

    /// The property indexes of external data not loaded yet (see
    /// ``AccessState/pendingExternal``); the data is loaded when the property is first read,
    /// and a write discards it.
    final var pendingExternal: PropertyIndexSet {
        get { extras?.pendingExternal ?? PropertyIndexSet() }
        set {
            if !newValue.isEmpty || extras != nil { extrasForWriting().pendingExternal = newValue }
        }
    }

    /// The object's observation registrar; nil until a read reports to one.
    ///
    /// Reads report to a registrar while the object is observed (see
    /// ``AccessState/observed``). Observers are found only through a registrar that a read
    /// reported to, so an object without one has none, and a change tells no one.
    final var observationRegistrar: ObservationRegistrar? { extras?.observationRegistrar }

    /// ``observationRegistrar``, made now if the object has none yet.
    final func makeObservationRegistrar() -> ObservationRegistrar {
        let extras = extrasForWriting()
        if let registrar = extras.observationRegistrar { return registrar }
        let made = ObservationRegistrar()
        extras.observationRegistrar = made
        return made
    }

    private func extrasForWriting() -> Extras {
        if let extras { return extras }
        let created = Extras()
        extras = created
        return created
    }

    /// Creates an object that belongs to no context yet; insert it with
    /// ``ManagedObjectContext/insert(_:)``.
    public required init() {}

    /// Creates an object and inserts it into `context`.
    ///
    /// An initializer that cannot throw cannot report a class that is not an entity of the
    /// context's model: the object then stays outside any context, and the context's next
    /// ``ManagedObjectContext/save()`` throws ``ObjectLogError/Code/entityNotInModel`` (listed
    /// in ``ObjectLogError/errors`` with any other misuse since the last save). Call
    /// ``ManagedObjectContext/insert(_:)`` to get that error at once.
    public convenience init(context: ManagedObjectContext) {
        self.init()
        do {
            try context.insert(self)
        } catch {
            context.recordMisuse(error)
        }
    }

    /// The name of the entity this class describes; by default the class's name.
    ///
    /// A subclass of an entity class is a subentity (see <doc:EntityInheritance>) and needs a
    /// name of its own: a class that overrides this must be overridden again by its
    /// subclasses, or the model refuses the two classes.
    open class var entityName: String { String(describing: self) }

    /// Whether the entity is abstract: it has no objects of its own, only those of its
    /// subentities, and inserting an instance of the class itself fails
    /// (``ObjectLogError/Code/abstractEntity``).
    ///
    /// Class variables are inherited, so say which class you mean; a subclass that inherits
    /// `true` without having subentities of its own could never hold an object, and the model
    /// refuses it:
    ///
    /// ```swift
    /// class Shape: ManagedObject {
    ///     override class var isAbstract: Bool { self == Shape.self }
    /// }
    /// ```
    open class var isAbstract: Bool { false }

    /// Attribute groups whose values must be unique together, by property name.
    ///
    /// Attributes declared with ``AttributeOptions/unique`` are unique on their own and need not
    /// be listed here.
    open class var uniquenessConstraints: [[String]] { [] }

    /// Indexes of the entity's attributes kept in the store, by property name: one list per
    /// index, a compound index listing its attributes in the order it sorts by.
    ///
    /// A fetch whose predicate compares the first attribute of an index with constants (or
    /// fixes it with `==` and compares the next) reads only the objects the index gives, from
    /// the first fetch after an open. An attribute declared with ``AttributeOptions/indexed``
    /// has an index of its own and need not be listed here. The indexes are part of the
    /// model's schema, so adding or dropping one is a lightweight migration that rewrites no
    /// object. See <doc:FetchingAndIndexes>.
    ///
    /// ```swift
    /// final class Reading: ManagedObject {
    ///     @Attribute var sensor = 0
    ///     @Attribute var time = Date.distantPast
    ///     override class var indexes: [[String]] { [["sensor", "time"]] }
    /// }
    /// ```
    open class var indexes: [[String]] { [] }

    /// The entity's name in an earlier model version, when it was renamed: stores written by
    /// that version are migrated on open, keeping the entity's objects.
    ///
    /// ```swift
    /// final class Preset: ManagedObject {
    ///     override class var originalEntityName: String? { "Recipe" }
    /// }
    /// ```
    open class var originalEntityName: String? { nil }

    /// Earlier names of renamed properties, by their current name: stores written by the
    /// version that used an earlier name are migrated on open, keeping the values.
    ///
    /// For attributes, `@Attribute(originalName:)` says the same beside the declaration; this
    /// also covers relationships.
    ///
    /// ```swift
    /// override class var originalPropertyNames: [String: String] { ["owner": "author"] }
    /// ```
    open class var originalPropertyNames: [String: String] { [:] }

    /// The object's identity, stable across contexts and launches once it is inserted.
    ///
    /// One exception: an inserted object that a save merges into an existing object under a
    /// merge policy (an upsert) leaves its context and takes that object's ID; see
    /// ``MergePolicy``.
    public var objectID: ObjectID {
        ObjectID(entityName: entity?.name ?? Self.entityName, key: key)
    }

    /// Whether the object's values have not been loaded yet.
    public var isFault: Bool { accessState.contains(.fault) }
    /// Whether the object was inserted and not yet saved.
    public var isInserted: Bool { lifecycle.contains(.inserted) }
    /// Whether the object has unsaved changes to a saved object.
    public var isUpdated: Bool { lifecycle.contains(.updated) }
    /// Whether the object was deleted and the deletion is not saved yet.
    public var isDeleted: Bool { lifecycle.contains(.deleted) }
    /// Whether the object is inserted, updated or deleted.
    public var hasChanges: Bool {
        !lifecycle.intersection([.inserted, .updated, .deleted]).isEmpty
    }

    // The lifecycle hooks are declared here because only the class body can declare methods
    // that subclasses override; when the engine calls them, and what they may do, is in
    // ManagedObject+Lifecycle.swift and the DocC article "Validating and reacting to changes".

    /// Called once, when the object is inserted into a context as a new object.
    ///
    /// Set initial values here (a creation date, say): changes are part of the insertion.
    /// It runs on the context's isolation domain, inside ``ManagedObjectContext/insert(_:)`` or
    /// ``init(context:)``. The base implementation does nothing.
    open func awakeFromInsert() {}

    /// Called each time the object's saved values are loaded from the store: a fault fired,
    /// or a fetch that returned it loaded.
    ///
    /// Writes made here are not recorded as changes (as in Core Data): use it to set up
    /// caches and other values derived from the saved ones. It runs on the context's isolation
    /// domain, also for bulk loads that decode on two threads. The base implementation does
    /// nothing.
    open func awakeFromFetch() {}

    /// Called when a save is about to write the object (inserted, updated or deleted).
    ///
    /// Changes made here are saved by the same save, and objects that they change, insert or
    /// delete get their own `willSave()` before it writes. Each object's `willSave()` runs
    /// once per save: changing the object itself again here does not call it again. The base
    /// implementation does nothing.
    open func willSave() {}

    /// Called after a save wrote the object (inserted, updated or deleted), before the
    /// context's did-save handlers run.
    ///
    /// Changes made here are not part of the save that just ended: they are unsaved changes
    /// for the next one. The base implementation does nothing.
    open func didSave() {}

    /// Called when the object is deleted, before its relationships' delete rules run (the
    /// relationships still hold their objects).
    ///
    /// A cascade calls it on each object it deletes; such an object no longer holds the object
    /// whose delete cascaded to it. The base implementation does nothing.
    open func prepareForDeletion() {}

    /// Checks an inserted object before a save writes it; throw to refuse the save.
    ///
    /// Runs after every `willSave()`, together with the attributes' validation rules (which run
    /// whether or not an override calls `super`); every failure of the save is collected into
    /// the one error the save throws (see ``ObjectLogError/errors``). The base implementation
    /// does nothing.
    /// - Throws: Any error; one that is not an ``ObjectLogError`` is reported as a
    ///   ``ObjectLogError/Code/validation`` error that names the object and keeps it as
    ///   ``ObjectLogError/underlyingError``.
    open func validateForInsert() throws {}

    /// Checks an updated object before a save writes it; throw to refuse the save.
    ///
    /// As ``validateForInsert()``, for saved objects with unsaved changes.
    /// - Throws: Any error, reported as for ``validateForInsert()``.
    open func validateForUpdate() throws {}

    /// Checks a deleted object before a save deletes it; throw to refuse the save.
    ///
    /// As ``validateForInsert()``, for deleted saved objects.
    /// - Throws: Any error, reported as for ``validateForInsert()``.
    open func validateForDelete() throws {}

    /// Compares by identity.
    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }

    /// Hashes by identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }

    /// The entity name and key, plus `(fault)` for unloaded objects.
    public var description: String {
        "\(entity?.name ?? Self.entityName)#\(key)\(isFault ? " (fault)" : "")"
    }

    // MARK: - Access hooks used by the property wrappers

    /// Runs before a wrapped property is written: loads a fault and records the change.
    @inlinable
    final func prepareWrite() {
        if accessState.rawValue != 0 { willWrite() }
    }

    /// Runs before a wrapped relationship is read when a read bit of ``accessState`` is set;
    /// the relationship's wrapper is `storage`, `offset` bytes into the object.
    ///
    /// While probing, the read records the storage key path. Otherwise a fault is loaded, and
    /// the read is reported to the object's observers (see ``AccessState/observed``).
    final func willReadRelationship(_ storage: AnyKeyPath, atOffset offset: Int) {
        if accessState.contains(.probing) {
            probe?.storage = storage
            probe?.reads += 1
            return
        }
        if accessState.contains(.fault) { fireFault() }
        if accessState.contains(.observed) { reportRead(atOffset: offset) }
    }

    /// Runs before a wrapped attribute is read when a read bit of ``accessState`` is set.
    ///
    /// The attribute is the one whose wrapper lies `offset` bytes into the object. While
    /// probing, the read is counted and the offset recorded. Otherwise a fault is loaded, the
    /// read is reported to the object's observers (see ``AccessState/observed``), and then
    /// external data of the attribute that is not loaded yet is read: the result is then
    /// `.some(data)`, with `data` nil if it could not be read (the error is kept). `nil` means
    /// there is nothing to store.
    ///
    /// Not inlinable: the getter inlined in client code only computes the offset.
    @usableFromInline
    final func willReadAttribute(atOffset offset: Int) -> Data?? {
        if accessState.contains(.probing) {
            probe?.reads += 1
            probe?.attributeOffset = offset
            return nil
        }
        if accessState.contains(.fault) { fireFault() }
        if accessState.contains(.observed) { reportRead(atOffset: offset) }
        guard accessState.contains(.pendingExternal),
            let index = entity?.accessor(atOffset: offset)?.index,
            pendingExternal.contains(index)
        else { return nil }
        pendingExternal.remove(index)
        let data =
            managedObjectContext.map { $0.loadExternalData(of: self, propertyIndex: index) }
            ?? loadDetachedExternalData(propertyIndex: index)
        return .some(data)
    }

    /// Runs before a wrapped attribute is written when ``accessState`` is not empty: does what
    /// ``willWrite()`` does, discards external data of the attribute (at `offset` bytes into
    /// the object) that is not loaded yet, which the new value replaces, and tells the
    /// attribute's observers that it is about to change.
    @usableFromInline
    final func willWriteAttribute(atOffset offset: Int) {
        willWrite(attributeOffset: offset, relationship: nil)
        if accessState.contains(.pendingExternal),
            let index = entity?.accessor(atOffset: offset)?.index
        {
            pendingExternal.remove(index)
        }
        if accessState.contains(.observed) { _ = willChangeObserved(atOffset: offset) }
    }

    /// Runs after a wrapped attribute was written on the slow path: tells the observers that
    /// ``willWriteAttribute(atOffset:)`` told of the coming change that it has happened.
    @usableFromInline
    final func didWriteAttribute(atOffset offset: Int) {
        if accessState.contains(.observed) { didChangeObserved(atOffset: offset) }
    }

    /// Runs before a wrapped property is written when ``accessState`` is not empty.
    @usableFromInline
    final func willWrite() {
        willWrite(attributeOffset: nil, relationship: nil)
    }

    /// Runs before the attribute at `attributeOffset` bytes into the object, or the
    /// relationship whose storage is `relationship`, is written, when ``accessState`` is not
    /// empty (the two say which property a failure names).
    ///
    /// A write to an object whose context has been released could never be saved: it stops
    /// the program (see ``writeAfterContextReleased(attributeOffset:relationship:)``). The
    /// context's `deinit` sets ``AccessState/tracksUpdates`` on its objects with unsaved
    /// changes, so that their writes come here too instead of taking the plain path.
    final func willWrite(attributeOffset: Int?, relationship: AnyKeyPath?) {
        if accessState.contains(.probing) { return }
        if accessState.contains(.fault) { fireFault() }
        if accessState.contains(.recordsUndo) {
            accessState.remove(.recordsUndo)
            managedObjectContext?.recordUndoState(of: self)
        }
        if accessState.contains(.tracksUpdates) {
            if let context = managedObjectContext {
                accessState.remove(.tracksUpdates)
                context.recordUndoState(of: self)
                context.markUpdated(self)
            } else if contextLink?.isContextReleased == true {
                writeAfterContextReleased(
                    attributeOffset: attributeOffset,
                    relationship: relationship
                )
            } else {
                accessState.remove(.tracksUpdates)
            }
        }
    }

    /// Stops the program on a write to an object whose context is gone, naming the object and
    /// the property.
    ///
    /// A setter cannot throw, and such a write can never be saved: no context records it, and
    /// no other context knows the object. Letting it through changed the object in memory
    /// only, a silent loss; a message that survives release builds (`fatalError`, not
    /// `precondition`) says what happened instead.
    @inline(never)
    final func writeAfterContextReleased(
        attributeOffset: Int?,
        relationship: AnyKeyPath?
    ) -> Never {
        let property =
            attributeOffset.flatMap { entity?.accessor(atOffset: $0)?.name }
            ?? relationship.map { relationshipName($0) } ?? "a property"
        fatalError(
            "\(entity?.name ?? Self.entityName).\(property) of \(self) was set after the object's "
                + "context was released: the change could never be saved. Keep the context "
                + "alive while you change its objects, or look the object up in a live context "
                + "by its objectID (\(objectID))."
        )
    }

    /// Loads the object's values from the store.
    ///
    /// Through the context when it still exists (which records a failure, see
    /// ``ManagedObjectContext/faultError``), otherwise straight from the coordinator.
    final func fireFault() {
        accessState.remove(.fault)
        if let context = managedObjectContext {
            context.loadValues(of: self)
            return
        }
        guard let coordinator, let entity else { return }
        do {
            try coordinator.loadValues(of: self, entity: entity, context: nil)
            awakeAfterLoad()
        } catch {
            loadError = error
        }
    }

    /// Reads unread external data after the object's context is gone; a failure is kept in
    /// ``loadError``.
    final func loadDetachedExternalData(propertyIndex: Int) -> Data? {
        guard let blob = detachedExternal.removeValue(forKey: propertyIndex), let coordinator
        else { return nil }
        do {
            return try coordinator.store.readBlob(blob)
        } catch {
            loadError = ObjectLogError.store(error, "cannot read the external data of \(objectID)")
            return nil
        }
    }

    /// Loads the object's values now if it is a fault, and throws if they could not be loaded.
    ///
    /// Reading a property of a fault loads it too, but a property getter cannot throw: when the
    /// store fails (an I/O error, a damaged record, an object deleted from the store), the
    /// getter returns the property's default value and the error is kept, both here and on the
    /// context (``ManagedObjectContext/faultError``), whose next ``ManagedObjectContext/save()``
    /// or fetch throws it. Call this method before reading values you cannot afford to get
    /// wrong, such as after the context that fetched the object is gone.
    /// - Throws: ``ObjectLogError`` with code `store`, `corrupt` or `notFound`.
    public func fulfillFault() throws(ObjectLogError) {
        if isFault { fireFault() }
        if let error = loadError {
            loadError = nil
            throw error
        }
    }
}

/// Bits consulted on every wrapped-property access.
@usableFromInline
struct AccessState: OptionSet, Sendable {
    @usableFromInline
    var rawValue: UInt8
    @usableFromInline
    init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Values are not loaded.
    static let fault = AccessState(rawValue: 1)
    /// A write must mark the object updated in its context.
    static let tracksUpdates = AccessState(rawValue: 2)
    /// Reads record their storage key path (model discovery).
    static let probing = AccessState(rawValue: 4)
    /// Some external data is loaded only when first read (the properties are in
    /// ``ManagedObject/pendingExternal``).
    @usableFromInline
    static let pendingExternal = AccessState(rawValue: 8)
    /// A write must first keep the object's state for undo.
    ///
    /// Set when the context has an undo manager and the open undo group does not hold the
    /// object yet (see ``ContextUndoManager``). Only objects whose writes would otherwise take
    /// the plain path (inserted or already changed) need it; a clean object's first write is
    /// checked anyway.
    static let recordsUndo = AccessState(rawValue: 16)
    /// Reads and writes are reported to the object's observation registrar (Swift's
    /// Observation framework): the object is registered in a context whose
    /// ``ManagedObjectContext/objectsAreObservable`` is true.
    ///
    /// A bit rather than a look at the context: objects of other contexts keep the fast path,
    /// with nothing more to check.
    static let observed = AccessState(rawValue: 32)
    /// The bits a read must act on (a clean object's reads stay on the fast path).
    @usableFromInline
    static let readBits: UInt8 = 1 | 4 | 8 | 32
}

/// Where an object is in its context's unit of work.
struct Lifecycle: OptionSet, Sendable {
    var rawValue: UInt8
    static let inserted = Lifecycle(rawValue: 1)
    static let updated = Lifecycle(rawValue: 2)
    static let deleted = Lifecycle(rawValue: 4)
}

/// What a read of a prototype in probing mode revealed about a key path.
final class Probe {
    /// The storage key path of the last relationship wrapper read.
    var storage: AnyKeyPath?
    /// The field offset of the last attribute wrapper read (see
    /// ``EntityDescription/attributeAccessor(for:)``).
    var attributeOffset: Int?
    /// How many wrapped properties were read.
    var reads = 0
}

/// What a context's objects refer to it through.
///
/// The context makes one, sets ``context`` at the end of its `init` and clears it first thing
/// in its `deinit`, so the objects of a context that is gone see `nil`, as with a weak
/// reference. A fetch that makes its faults on two threads gives each worker a link of its own
/// (see ``ManagedObjectContext/workerLink()``), so that the workers do not contend for one
/// reference count; the context clears those too.
///
/// The link also holds the context's coordinator, strongly (the coordinator holds no contexts
/// or objects, so there is no cycle): a fault outlives the context that fetched it. One link
/// per object instead of a context and a coordinator reference keeps every object smaller
/// and saves a retain and a release for each one made.
final class ContextLink {
    // `unowned(unsafe)`: valid while the context lives, and nil from the start of its
    // deinitialisation (the context is used from one isolation domain, so nothing reads the
    // link concurrently with that).
    unowned(unsafe) var context: ManagedObjectContext?
    let coordinator: PersistentStoreCoordinator?
    /// Whether ``context`` is nil because the context was released (set by its `deinit`),
    /// rather than never set: the objects of a released context refuse writes.
    var isContextReleased = false

    init(coordinator: PersistentStoreCoordinator?) {
        self.coordinator = coordinator
    }

    /// The link of objects that left the context: no context, the same coordinator.
    lazy var detached = ContextLink(coordinator: coordinator)
}

/// A set of property indexes, without an allocation for the first 64.
struct PropertyIndexSet {
    /// Indexes below 64, one bit each.
    private var low: UInt64 = 0
    /// Indexes of 64 and above.
    private var high: Set<Int> = []

    /// Whether the set is empty.
    var isEmpty: Bool { low == 0 && high.isEmpty }

    /// Whether `index` is in the set.
    func contains(_ index: Int) -> Bool {
        index < 64 ? low & (1 << UInt64(index)) != 0 : high.contains(index)
    }

    /// Adds `index`.
    mutating func insert(_ index: Int) {
        if index < 64 { low |= 1 << UInt64(index) } else { high.insert(index) }
    }

    /// Removes `index`.
    mutating func remove(_ index: Int) {
        if index < 64 { low &= ~(1 << UInt64(index)) } else { high.remove(index) }
    }
}
