//! A safe view of the Lua stack for the hot path of a script run — the only `unsafe` code of
//! the scripting engine.
//!
//! mlua's safe API turns every value crossing the boundary into a registry-backed handle; for
//! `redis.call` that cost more than the command itself. Redis does the conversions on Lua's C
//! API, and so do we, through [`Stack`]: a borrowed `lua_State` whose methods check every index
//! and reserve stack space before each push, and never call a Lua function that can raise an
//! error outside a protected call. The few entry points that make a [`Stack`] are here too: the
//! C-function trampoline behind `redis.call`/`redis.pcall` ([`c_function`]) and the main
//! thread a script runs on ([`MainState`]).
//!
//! Errors and unwinding: Lua 5.1 raises errors with `longjmp`. The only `lua_error` here is the
//! trampoline's, called after every Rust value of the call was dropped. Allocations made by the
//! code here never fail: the interpreter's memory bound ([`MemoryLimit`]) refuses allocations
//! only while Lua code runs (it is disarmed for the duration of every trampoline call and
//! outside script runs), and then Lua raises its memory error inside Lua, caught by the run's
//! protected call. A Rust panic never unwinds through Lua frames: it is caught, parked in a
//! thread-local, reported to the script as an error, and resumed by [`MainState::with`] once
//! Lua has returned.
#![allow(unsafe_code)]

use mlua::ffi::{self, lua_State};
use mlua::{Function, IntoLuaMulti, Lua};
use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

// The Lua interpreter itself: mlua-sys is built with `external`, so without this use nothing
// would link the C library that mlua's and these declarations need.
use locksmith_lua as _;

// Redis's read-only tables, from the patched Lua (locksmith-lua, lua/README.md).
unsafe extern "C-unwind" {
    fn lua_enablereadonlytable(state: *mut lua_State, idx: c_int, enabled: c_int);
    fn lua_isreadonlytable(state: *mut lua_State, idx: c_int) -> c_int;
}

/// A Lua value's type, as `lua_type` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// No value at that index.
    None,
    /// `nil`
    Nil,
    /// `true`/`false`
    Boolean,
    /// A light userdata (`cjson.null`).
    LightUserData,
    /// A number.
    Number,
    /// A string.
    String,
    /// A table.
    Table,
    /// A Lua or C function.
    Function,
    /// A full userdata.
    UserData,
    /// A coroutine.
    Thread,
}

impl Kind {
    fn of(code: c_int) -> Kind {
        match code {
            ffi::LUA_TNIL => Kind::Nil,
            ffi::LUA_TBOOLEAN => Kind::Boolean,
            ffi::LUA_TLIGHTUSERDATA => Kind::LightUserData,
            ffi::LUA_TNUMBER => Kind::Number,
            ffi::LUA_TSTRING => Kind::String,
            ffi::LUA_TTABLE => Kind::Table,
            ffi::LUA_TFUNCTION => Kind::Function,
            ffi::LUA_TUSERDATA => Kind::UserData,
            ffi::LUA_TTHREAD => Kind::Thread,
            _ => Kind::None,
        }
    }
}

/// A string or number read off the stack.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scalar<'s> {
    /// A string's bytes.
    Bytes(&'s [u8]),
    /// A number.
    Number(f64),
    /// Anything else (or no value).
    Other,
}

/// The stack has no room left (Lua's `LUAI_MAXCSTACK` slots are in use), or an operation was
/// asked of a value that cannot take it (a table operation on a non-table, a nil or NaN key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StackError;

/// The stack of a running Lua state, borrowed by Rust code Lua called.
///
/// Indexes are Lua's: `1..=top` from the bottom of the current frame, `-1` for the top.
/// Methods that take an index check it and treat an invalid one as "no value".
pub(super) struct Stack<'l> {
    state: *mut lua_State,
    _frame: PhantomData<&'l mut lua_State>,
}

impl Stack<'_> {
    /// Wraps the stack of `state`.
    ///
    /// # Safety
    /// `state` must be a live Lua state currently running a C function (or protected closure)
    /// on this thread, for the whole lifetime of the returned value; nothing else may use that
    /// state until the value is dropped, except the Lua code that [`Stack::call`] runs.
    unsafe fn new<'l>(state: *mut lua_State) -> Stack<'l> {
        Stack {
            state,
            _frame: PhantomData,
        }
    }

    /// Number of values in the current frame.
    pub(super) fn top(&self) -> c_int {
        // SAFETY: `self.state` is live (`Stack::new`); lua_gettop reads two pointers.
        unsafe { ffi::lua_gettop(self.state) }
    }

    /// `idx` as an absolute index into the current frame, if a value is there.
    fn absolute(&self, idx: c_int) -> Option<c_int> {
        let top = self.top();
        let abs = if idx < 0 { top + 1 + idx } else { idx };
        (abs >= 1 && abs <= top).then_some(abs)
    }

    /// The type of the value at `idx` ([`Kind::None`] if there is none).
    pub(super) fn kind(&self, idx: c_int) -> Kind {
        match self.absolute(idx) {
            // SAFETY: `abs` is a valid index of the current frame.
            Some(abs) => Kind::of(unsafe { ffi::lua_type(self.state, abs) }),
            None => Kind::None,
        }
    }

    /// The bytes of the string at `idx` (no number coercion), borrowed for as long as the stack
    /// is not changed (a string on the stack is kept alive by its slot, and Lua strings never
    /// move or change).
    pub(super) fn bytes(&self, idx: c_int) -> Option<&[u8]> {
        match self.scalar(idx) {
            Scalar::Bytes(s) => Some(s),
            _ => None,
        }
    }

    /// The value at `idx` if it is a string or a number (one type check, no coercion).
    pub(super) fn scalar(&self, idx: c_int) -> Scalar<'_> {
        let Some(abs) = self.absolute(idx) else {
            return Scalar::Other;
        };
        // SAFETY: `abs` is valid; for a string, lua_tolstring neither converts nor raises and
        // returns a pointer to `len` bytes owned by the string, which its slot keeps alive
        // while `self` is borrowed; for a number, lua_tonumber reads it.
        unsafe {
            match ffi::lua_type(self.state, abs) {
                ffi::LUA_TSTRING => {
                    let mut len = 0usize;
                    let ptr = ffi::lua_tolstring(self.state, abs, &mut len);
                    if ptr.is_null() {
                        Scalar::Other
                    } else {
                        Scalar::Bytes(std::slice::from_raw_parts(ptr.cast::<u8>(), len))
                    }
                }
                ffi::LUA_TNUMBER => Scalar::Number(ffi::lua_tonumber(self.state, abs)),
                _ => Scalar::Other,
            }
        }
    }

    /// The number at `idx` (no string coercion).
    pub(super) fn number(&self, idx: c_int) -> Option<f64> {
        match self.scalar(idx) {
            Scalar::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The boolean at `idx`.
    pub(super) fn boolean(&self, idx: c_int) -> Option<bool> {
        let abs = self.absolute(idx)?;
        // SAFETY: `abs` is valid.
        unsafe {
            (ffi::lua_type(self.state, abs) == ffi::LUA_TBOOLEAN)
                .then(|| ffi::lua_toboolean(self.state, abs) != 0)
        }
    }

    /// The string or number at `idx` as `tostring` shows it (numbers as `%.14g`), converted on
    /// a copy so the value at `idx` is left as it is.
    pub(super) fn coerce_bytes(&mut self, idx: c_int) -> Option<Vec<u8>> {
        match self.kind(idx) {
            Kind::String => self.bytes(idx).map(<[u8]>::to_vec),
            Kind::Number => {
                self.push_copy(idx).ok()?;
                // SAFETY: the copy is a number at the top; lua_tolstring converts that slot
                // only (it cannot raise: allocation failures abort), then it is popped.
                let out = unsafe {
                    let mut len = 0usize;
                    let ptr = ffi::lua_tolstring(self.state, -1, &mut len);
                    (!ptr.is_null())
                        .then(|| std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec())
                };
                self.pop(1);
                out
            }
            _ => None,
        }
    }

    /// Pops `n` values (fewer if the frame has fewer).
    pub(super) fn pop(&mut self, n: c_int) {
        let n = n.clamp(0, self.top());
        // SAFETY: the new top is within the frame.
        unsafe { ffi::lua_settop(self.state, -n - 1) }
    }

    /// Moves the value on top to `idx` (absolute) and drops the values above it: a result
    /// keeps only what is below `idx` under it. Nothing happens unless `idx` is below the top.
    pub(super) fn move_top_to(&mut self, idx: c_int) {
        if idx < 1 || idx >= self.top() {
            return;
        }
        // SAFETY: `idx` is a valid slot below the top; lua_replace pops the top into it and
        // the new top, `idx`, is within the frame.
        unsafe {
            ffi::lua_replace(self.state, idx);
            ffi::lua_settop(self.state, idx);
        }
    }

    /// Makes room for `n` more values.
    pub(super) fn reserve(&mut self, n: c_int) -> Result<(), StackError> {
        // SAFETY: lua_checkstack returns 0 instead of raising when the stack cannot grow.
        match unsafe { ffi::lua_checkstack(self.state, n) } {
            0 => Err(StackError),
            _ => Ok(()),
        }
    }

    /// Pushes `nil`.
    pub(super) fn push_nil(&mut self) -> Result<(), StackError> {
        self.reserve(1)?;
        // SAFETY: a slot was reserved.
        unsafe { ffi::lua_pushnil(self.state) };
        Ok(())
    }

    /// Pushes a boolean.
    pub(super) fn push_bool(&mut self, b: bool) -> Result<(), StackError> {
        self.reserve(1)?;
        // SAFETY: a slot was reserved.
        unsafe { ffi::lua_pushboolean(self.state, c_int::from(b)) };
        Ok(())
    }

    /// Pushes a number.
    pub(super) fn push_number(&mut self, n: f64) -> Result<(), StackError> {
        self.reserve(1)?;
        // SAFETY: a slot was reserved.
        unsafe { ffi::lua_pushnumber(self.state, n) };
        Ok(())
    }

    /// Pushes a string with these bytes.
    pub(super) fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), StackError> {
        self.reserve(1)?;
        // SAFETY: a slot was reserved; Lua copies `len` bytes from the pointer (a dangling but
        // non-null pointer is never read for an empty slice).
        unsafe { ffi::lua_pushlstring_(self.state, bytes.as_ptr().cast(), bytes.len()) };
        Ok(())
    }

    /// Pushes a new table sized for `narr` array and `nrec` hash entries.
    pub(super) fn push_table(&mut self, narr: usize, nrec: usize) -> Result<(), StackError> {
        self.reserve(1)?;
        let narr = c_int::try_from(narr).unwrap_or(c_int::MAX);
        let nrec = c_int::try_from(nrec).unwrap_or(c_int::MAX);
        // SAFETY: a slot was reserved; sizes are hints.
        unsafe { ffi::lua_createtable(self.state, narr, nrec) };
        Ok(())
    }

    /// Pushes the value a [`Registered`] reference holds.
    pub(super) fn push_registered(&mut self, value: Registered) -> Result<(), StackError> {
        self.reserve(1)?;
        // SAFETY: a slot was reserved; lua_rawgeti on the registry never raises (a reference
        // made by `MainState::register` on this state is a valid integer key).
        unsafe { ffi::lua_rawgeti_(self.state, ffi::LUA_REGISTRYINDEX, value.0) };
        Ok(())
    }

    /// Pushes a copy of the value at `idx`.
    pub(super) fn push_copy(&mut self, idx: c_int) -> Result<(), StackError> {
        let abs = self.absolute(idx).ok_or(StackError)?;
        self.reserve(1)?;
        // SAFETY: `abs` is valid and a slot was reserved.
        unsafe { ffi::lua_pushvalue(self.state, abs) };
        Ok(())
    }

    /// Marks the table at `idx` read-only or writable again (Redis's
    /// `lua_enablereadonlytable`): while marked, every write to it raises `Attempt to modify
    /// a readonly table`, and this view refuses to write to it.
    pub(super) fn set_readonly(&mut self, idx: c_int, readonly: bool) -> Result<(), StackError> {
        let t = self.table(idx)?;
        // SAFETY: `t` is a table on the stack.
        unsafe { lua_enablereadonlytable(self.state, t, c_int::from(readonly)) };
        Ok(())
    }

    /// Whether the table at `idx` is read-only (`false` for anything else).
    pub(super) fn is_readonly(&self, idx: c_int) -> bool {
        // SAFETY: `t` is a table on the stack.
        self.table(idx)
            .is_ok_and(|t| unsafe { lua_isreadonlytable(self.state, t) } != 0)
    }

    /// The absolute index of the table at `idx`, if it may be written (a read-only table
    /// would make the write raise).
    fn writable_table(&self, idx: c_int) -> Result<c_int, StackError> {
        let t = self.table(idx)?;
        if self.is_readonly(t) {
            return Err(StackError);
        }
        Ok(t)
    }

    /// The absolute index of the table at `idx`.
    fn table(&self, idx: c_int) -> Result<c_int, StackError> {
        let abs = self.absolute(idx).ok_or(StackError)?;
        // SAFETY: `abs` is valid.
        match unsafe { ffi::lua_type(self.state, abs) } {
            ffi::LUA_TTABLE => Ok(abs),
            _ => Err(StackError),
        }
    }

    /// `t[k] = v` without metamethods, for the table at `table` and the key and value on top
    /// (both popped). A nil or NaN key is refused (Lua would raise).
    pub(super) fn raw_set(&mut self, table: c_int) -> Result<(), StackError> {
        let t = self.writable_table(table)?;
        if self.top() < t + 2 {
            return Err(StackError);
        }
        match self.kind(-2) {
            Kind::Nil | Kind::None => return Err(StackError),
            Kind::Number if self.number(-2).is_some_and(f64::is_nan) => return Err(StackError),
            _ => {}
        }
        // SAFETY: `t` is a writable table below the key and value; the key is neither nil nor
        // NaN, so lua_rawset cannot raise (allocation failures abort).
        unsafe { ffi::lua_rawset(self.state, t) };
        Ok(())
    }

    /// `t[name] = v` without metamethods, for the value on top (popped).
    pub(super) fn set_field(&mut self, table: c_int, name: &[u8]) -> Result<(), StackError> {
        let t = self.table(table)?;
        if self.top() <= t {
            return Err(StackError);
        }
        self.push_bytes(name)?;
        self.push_copy(-2)?;
        self.raw_set(t)?;
        self.pop(1);
        Ok(())
    }

    /// `t[n] = v` without metamethods, for the value on top (popped).
    pub(super) fn set_index(&mut self, table: c_int, n: usize) -> Result<(), StackError> {
        let t = self.writable_table(table)?;
        let n = c_int::try_from(n).map_err(|_| StackError)?;
        if self.top() <= t {
            return Err(StackError);
        }
        // SAFETY: `t` is a writable table below the value on top; an integer key cannot make
        // lua_rawseti raise.
        unsafe { ffi::lua_rawseti_(self.state, t, n) };
        Ok(())
    }

    /// Pushes `t[name]` (raw) and returns its kind.
    pub(super) fn get_field(&mut self, table: c_int, name: &[u8]) -> Result<Kind, StackError> {
        let t = self.table(table)?;
        self.push_bytes(name)?;
        // SAFETY: `t` is a table and the key is on top; lua_rawget never raises.
        unsafe { ffi::lua_rawget_(self.state, t) };
        Ok(self.kind(-1))
    }

    /// Pushes `t[n]` (raw) and returns its kind.
    pub(super) fn get_index(&mut self, table: c_int, n: usize) -> Result<Kind, StackError> {
        let t = self.table(table)?;
        let n = c_int::try_from(n).map_err(|_| StackError)?;
        self.reserve(1)?;
        // SAFETY: `t` is a table and a slot was reserved; lua_rawgeti never raises.
        unsafe { ffi::lua_rawgeti_(self.state, t, n) };
        Ok(self.kind(-1))
    }

    /// `next(t, k)` for the table at `table` and the key on top: pops the key and pushes the
    /// next key and value (`Ok(true)`), or pushes nothing at the end (`Ok(false)`). Runs in a
    /// protected call, so a key that is not in the table is an error, not a raise.
    pub(super) fn next(&mut self, table: c_int) -> Result<bool, StackError> {
        unsafe extern "C-unwind" fn protected_next(state: *mut lua_State) -> c_int {
            // SAFETY: called by lua_pcall below with (table, key): lua_next pops the key and
            // pushes two values or none; an invalid key raises into that pcall.
            unsafe {
                if ffi::lua_next(state, 1) == 0 {
                    0
                } else {
                    2
                }
            }
        }
        let t = self.table(table)?;
        if self.top() <= t {
            return Err(StackError);
        }
        self.reserve(4)?;
        let base = self.top() - 1;
        // SAFETY: slots were reserved; the C function, the table and the key are pushed and
        // called in protected mode with two results (nils when the traversal ended).
        let status = unsafe {
            ffi::lua_pushcclosure(self.state, protected_next, 0);
            ffi::lua_pushvalue(self.state, t);
            ffi::lua_pushvalue(self.state, -3);
            ffi::lua_pcall(self.state, 2, 2, 0)
        };
        if status != ffi::LUA_OK {
            // The error value; then the old key.
            self.pop(2);
            return Err(StackError);
        }
        // Stack: ... key, next_key, next_value: drop the old key.
        // SAFETY: `base + 1` is the old key's slot, within the frame.
        unsafe { ffi::lua_remove(self.state, base + 1) };
        if self.kind(-2) == Kind::Nil {
            self.pop(2);
            return Ok(false);
        }
        Ok(true)
    }

    /// Calls the function below its `nargs` arguments on top, in protected mode with the
    /// message handler at `handler`, keeping one result. `Ok(())` leaves the result on top;
    /// `Err(status)` leaves the error value the handler returned.
    pub(super) fn call(&mut self, nargs: c_int, handler: c_int) -> Result<(), c_int> {
        let handler = match self.absolute(handler) {
            // SAFETY: `abs` is valid.
            Some(abs) if unsafe { ffi::lua_type(self.state, abs) } == ffi::LUA_TFUNCTION => abs,
            _ => return Err(ffi::LUA_ERRRUN),
        };
        if nargs < 0 || self.top() <= handler + nargs || self.kind(-nargs - 1) != Kind::Function {
            return Err(ffi::LUA_ERRRUN);
        }
        // SAFETY: a function and its arguments are on top, above a valid handler; lua_pcall
        // catches every error of the call.
        match unsafe { ffi::lua_pcall(self.state, nargs, 1, handler) } {
            ffi::LUA_OK => Ok(()),
            status => Err(status),
        }
    }
}

thread_local! {
    /// A panic caught in Rust code that Lua called, waiting to be resumed once Lua returned.
    static PANIC: RefCell<Option<Box<dyn Any + Send>>> = const { RefCell::new(None) };
}

/// Resumes a panic caught while Lua ran (see the module documentation).
fn resume_panic() {
    if let Some(payload) = PANIC.with(|p| p.borrow_mut().take()) {
        std::panic::resume_unwind(payload);
    }
}

/// What a Rust function called from Lua through [`c_function`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Return {
    /// Return the top `n` values to Lua.
    Values(c_int),
    /// Raise the value on top as a Lua error.
    Raise,
}

/// A Rust function Lua calls as a C function, with a context shared by all its calls.
pub(super) trait CFunction {
    /// The context, kept alive by the Lua state.
    type Context: Send + Sync + 'static;
    /// The call; Lua's arguments are the stack's values `1..=top`.
    fn call(stack: &mut Stack<'_>, context: &Self::Context) -> Return;
}

/// Keeps the contexts of [`c_function`]s alive as long as the Lua state.
struct KeepAlive(Vec<Arc<dyn Any + Send + Sync>>);

/// Creates a Lua function (a C closure) that runs `F::call` with `context`.
pub(super) fn c_function<F: CFunction>(
    lua: &Lua,
    context: Arc<F::Context>,
) -> mlua::Result<Function> {
    unsafe extern "C-unwind" fn trampoline<F: CFunction>(state: *mut lua_State) -> c_int {
        let action = {
            // SAFETY: the upvalue is the pointer `c_function` stored, to a context that
            // `KeepAlive` holds for the life of the state; `state` is running this C function.
            let context = unsafe {
                &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(1)).cast::<F::Context>()
            };
            // SAFETY: `state` is running this C function.
            let memory = unsafe { MemoryLimit::of(state) };
            // Rust code pushes and converts without protection: no allocation may fail here.
            let armed = memory.map(|m| m.armed.swap(false, Ordering::Relaxed));
            let mut stack = unsafe { Stack::new(state) };
            let action = match catch_unwind(AssertUnwindSafe(|| F::call(&mut stack, context))) {
                Ok(action) => action,
                Err(payload) => {
                    PANIC.with(|p| *p.borrow_mut() = Some(payload));
                    match stack.push_bytes(b"ERR internal error while running a command") {
                        Ok(()) => Return::Raise,
                        Err(_) => Return::Values(0),
                    }
                }
            };
            if let (Some(memory), Some(true)) = (memory, armed) {
                memory.armed.store(true, Ordering::Relaxed);
            }
            action
        };
        match action {
            Return::Values(n) => n,
            // SAFETY: every Rust value of this call was dropped above (`action` is Copy), so
            // the longjmp skips no destructor; the error value is on top.
            Return::Raise => unsafe { ffi::lua_error(state) },
        }
    }
    let ptr = Arc::as_ptr(&context).cast_mut().cast::<std::ffi::c_void>();
    let keep: Arc<dyn Any + Send + Sync> = context;
    match lua.remove_app_data::<KeepAlive>() {
        Some(mut kept) => {
            kept.0.push(keep);
            lua.set_app_data(kept);
        }
        None => {
            lua.set_app_data(KeepAlive(vec![keep]));
        }
    }
    // SAFETY: the closure only pushes a light userdata and a C closure (slots reserved by
    // mlua's protected call); the resulting function is the single value left on the stack.
    unsafe {
        lua.exec_raw::<Function>((), |state| {
            ffi::lua_pushlightuserdata(state, ptr);
            ffi::lua_pushcclosure(state, trampoline::<F>, 1);
        })
    }
}

/// A value held in the Lua registry by [`MainState::register`] until
/// [`MainState::unregister`] or the end of the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Registered(c_int);

impl Registered {
    /// The registry slot of a value mlua holds (valid while `key` is alive and not removed).
    pub(super) fn of_key(key: &mlua::RegistryKey) -> Registered {
        Registered(key.id())
    }
}

/// The main thread of an interpreter, on which the engine runs scripts directly with Lua's C
/// API (through mlua, every run cost two C-closure allocations, a protected call and a lock
/// around it).
#[derive(Debug)]
pub(super) struct MainState {
    state: *mut lua_State,
    /// Set while [`MainState::with`] runs, so it is never entered twice.
    busy: std::cell::Cell<bool>,
}

// SAFETY: the pointer is only used through `&MainState` by its owner (the engine, which owns
// the `Lua` it came from and is moved between threads only as a whole, under the node's state
// lock); `MainState` is not `Sync`, so two threads never use it at once.
unsafe impl Send for MainState {}

impl MainState {
    /// The main thread of `lua`.
    pub(super) fn of(lua: &Lua) -> mlua::Result<MainState> {
        let mut state = std::ptr::null_mut();
        // SAFETY: the closure only reads the pointer; called outside any Lua call, mlua runs it
        // on the main thread.
        unsafe { lua.exec_raw::<()>((), |s| state = s)? };
        Ok(MainState {
            state,
            busy: std::cell::Cell::new(false),
        })
    }

    /// Holds `value` in the registry of `lua` (this state's) and returns its reference.
    pub(super) fn register(&self, lua: &Lua, value: impl IntoLuaMulti) -> mlua::Result<Registered> {
        let mut r = ffi::LUA_REFNIL;
        // SAFETY: the value is the one argument mlua pushed; luaL_ref pops it (allocation
        // failures abort rather than raise).
        unsafe {
            lua.exec_raw::<()>(value, |state| {
                if ffi::lua_gettop(state) >= 1 {
                    ffi::lua_settop(state, 1);
                    r = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
                }
            })?
        };
        Ok(Registered(r))
    }

    /// Releases a value [`MainState::register`] holds (its slot is reused; the value is
    /// collected once nothing else refers to it). Called outside any Lua call, as
    /// [`MainState::with`].
    pub(super) fn unregister(&self, value: Registered) {
        if self.busy.get() || value.0 == ffi::LUA_REFNIL {
            return;
        }
        // SAFETY: the main thread is live and no Lua call is in progress on it (see `with`);
        // luaL_unref only writes the registry's array slot and its free list, which exist.
        unsafe { ffi::luaL_unref(self.state, ffi::LUA_REGISTRYINDEX, value.0) };
    }

    /// Runs `f` on the main thread's stack. Values `f` leaves are popped; a panic in `f`, or
    /// one parked by a C function it ran, is resumed once the stack is restored. `None` if
    /// called from inside another `with` (never done by the engine).
    ///
    /// Must not be called while mlua is inside a call into this interpreter (the engine only
    /// calls it from `Engine::run`, outside any Lua call).
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Stack<'_>) -> R) -> Option<R> {
        if self.busy.replace(true) {
            return None;
        }
        // SAFETY: the main thread is live (the engine owns its `Lua`), no Lua call is in
        // progress on it (see above, and `busy`), and the Stack does not escape `f`.
        let mut stack = unsafe { Stack::new(self.state) };
        let base = stack.top();
        let out = catch_unwind(AssertUnwindSafe(|| f(&mut stack)));
        let extra = stack.top() - base;
        stack.pop(extra);
        self.busy.set(false);
        resume_panic();
        match out {
            Ok(r) => Some(r),
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }
}

/// What the instruction hook reads, from whichever thread (the main one or a coroutine) it
/// fires on: the `SCRIPT KILL` flag, where to record the kill site, and the main thread.
pub(super) struct HookContext {
    kill: Arc<AtomicBool>,
    shared: Arc<super::RunShared>,
    main: *mut lua_State,
    /// The interpreter's memory bound (its allocator's userdata).
    pub(super) memory: MemoryLimit,
    /// While `FUNCTION LOAD` runs a library's code: the [`load_clock_us`] time past which
    /// the hook stops it with `FUNCTION LOAD timeout`; 0 otherwise.
    pub(super) load_deadline: std::sync::atomic::AtomicU64,
}

/// Microseconds on a monotonic clock (for [`HookContext::load_deadline`]).
pub(super) fn load_clock_us() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(std::time::Instant::now);
    u64::try_from(epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// The interpreter's memory bound: the allocator mlua installed, wrapped so that while a
/// script's Lua code runs ([`MemoryLimit::arm`]) an allocation that would take the interpreter
/// past `limit` bytes is refused (Lua then raises its memory error where it allocates, inside
/// the run's protected call), and the refusal is remembered so the instruction hook stops the
/// script for good (a `pcall` cannot swallow it). While a script holds more than half the
/// bound the hook makes the collector run continuously, so garbage does not count against it.
#[derive(Debug)]
pub(super) struct MemoryLimit {
    inner: ffi::lua_Alloc,
    inner_ud: *mut std::ffi::c_void,
    /// Bytes the interpreter holds (Lua's own count, kept by the allocator).
    used: AtomicUsize,
    /// The bound in bytes; 0 for none.
    limit: usize,
    /// Refusals are on (Lua code of a script is running, outside any Rust call).
    armed: AtomicBool,
    /// An allocation was refused during this run.
    exceeded: AtomicBool,
    /// The hook lowered the collector's pause during this run.
    pressed: AtomicBool,
}

impl MemoryLimit {
    /// The bound installed on `state`'s allocator, if any.
    ///
    /// # Safety
    /// `state` must be a live Lua state; the returned reference must not outlive it.
    unsafe fn of<'a>(state: *mut lua_State) -> Option<&'a MemoryLimit> {
        let mut ud = std::ptr::null_mut();
        // SAFETY: reads two fields of the live global state.
        let alloc = unsafe { ffi::lua_getallocf(state, &mut ud) };
        let ours: ffi::lua_Alloc = limited_alloc;
        if std::ptr::fn_addr_eq(alloc, ours) {
            // SAFETY: `limited_alloc` is only installed with a `MemoryLimit` as its userdata,
            // which lives as long as the state (see `MainState::install_hook`).
            unsafe { ud.cast::<MemoryLimit>().cast_const().as_ref() }
        } else {
            None
        }
    }

    /// Starts refusing allocations past the bound (the script's code is about to run).
    pub(super) fn arm(&self) {
        self.exceeded.store(false, Ordering::Relaxed);
        self.pressed.store(false, Ordering::Relaxed);
        self.armed.store(true, Ordering::Relaxed);
    }

    /// Stops refusing; returns (whether an allocation was refused, whether the collector was
    /// pressed) for the run that ends.
    pub(super) fn disarm(&self) -> (bool, bool) {
        self.armed.store(false, Ordering::Relaxed);
        (
            self.exceeded.load(Ordering::Relaxed),
            self.pressed.load(Ordering::Relaxed),
        )
    }

    /// Bytes the interpreter holds.
    pub(super) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// The allocator of a bounded interpreter (see [`MemoryLimit`]); never raises, never unwinds.
unsafe extern "C" fn limited_alloc(
    ud: *mut std::ffi::c_void,
    ptr: *mut std::ffi::c_void,
    osize: usize,
    nsize: usize,
) -> *mut std::ffi::c_void {
    // SAFETY: installed with a live `MemoryLimit` as `ud` (see `MainState::install_hook`).
    let Some(memory) = (unsafe { ud.cast::<MemoryLimit>().cast_const().as_ref() }) else {
        return std::ptr::null_mut();
    };
    // Lua 5.1 passes 0 as the old size of a new block.
    let old = if ptr.is_null() { 0 } else { osize };
    if nsize > old
        && memory.limit > 0
        && memory.armed.load(Ordering::Relaxed)
        && memory.used().saturating_add(nsize - old) > memory.limit
    {
        memory.exceeded.store(true, Ordering::Relaxed);
        return std::ptr::null_mut();
    }
    // SAFETY: the allocator mlua installed, called with its own userdata and Lua's arguments.
    let out = unsafe { (memory.inner)(memory.inner_ud, ptr, osize, nsize) };
    if nsize == 0 || !out.is_null() {
        let used = memory.used().saturating_sub(old).saturating_add(nsize);
        memory.used.store(used, Ordering::Relaxed);
    }
    out
}

// SAFETY: `main` is only handed to `lua_sethook` by the hook, which runs on the thread that
// runs the interpreter (the engine, owner of the `Lua`, is used by one thread at a time).
unsafe impl Send for HookContext {}
unsafe impl Sync for HookContext {}

/// The registry key of the hook context (its address is the key).
static HOOK_CONTEXT_KEY: u8 = 0;

impl MainState {
    /// Installs the instruction hook on the main thread. Coroutines a script creates inherit it
    /// (Lua 5.1's `lua_newthread` copies the hook), so the BUSY hand-off and `SCRIPT KILL` work
    /// inside them too. The returned box must outlive the interpreter.
    pub(super) fn install_hook(
        &self,
        kill: Arc<AtomicBool>,
        shared: Arc<super::RunShared>,
        memory_limit: usize,
    ) -> Box<HookContext> {
        let mut inner_ud = std::ptr::null_mut();
        // SAFETY: no Lua call is in progress (called while building the engine): the
        // allocator can be read and replaced, and the byte count read.
        let (inner, used) = unsafe {
            let inner = ffi::lua_getallocf(self.state, &mut inner_ud);
            let kb = ffi::lua_gc(self.state, ffi::LUA_GCCOUNT, 0).max(0) as usize;
            let bytes = ffi::lua_gc(self.state, ffi::LUA_GCCOUNTB, 0).max(0) as usize;
            (inner, kb * 1024 + bytes)
        };
        let context = Box::new(HookContext {
            kill,
            shared,
            main: self.state,
            memory: MemoryLimit {
                inner,
                inner_ud,
                used: AtomicUsize::new(used),
                limit: memory_limit,
                armed: AtomicBool::new(false),
                exceeded: AtomicBool::new(false),
                pressed: AtomicBool::new(false),
            },
            load_deadline: std::sync::atomic::AtomicU64::new(0),
        });
        let memory = std::ptr::from_ref::<MemoryLimit>(&context.memory)
            .cast_mut()
            .cast();
        // SAFETY: as above; the box is never moved out of and outlives the state (the
        // engine declares it after its `Lua`), so the allocator's userdata stays valid until
        // the state is closed.
        unsafe { ffi::lua_setallocf(self.state, limited_alloc, memory) };
        let key = std::ptr::addr_of!(HOOK_CONTEXT_KEY).cast_mut().cast();
        let value = std::ptr::from_ref::<HookContext>(&context)
            .cast_mut()
            .cast();
        // SAFETY: no Lua call is in progress (called while building the engine); two pushes
        // and a raw set cannot raise (allocation failures abort).
        unsafe {
            ffi::lua_pushlightuserdata(self.state, key);
            ffi::lua_pushlightuserdata(self.state, value);
            ffi::lua_rawset(self.state, ffi::LUA_REGISTRYINDEX);
        }
        self.arm_hook();
        context
    }

    /// (Re)sets the main thread's hook to its normal period ([`super::HOOK_PERIOD`]
    /// instructions); a kill leaves it firing on every instruction.
    pub(super) fn arm_hook(&self) {
        // SAFETY: the main thread is live; lua_sethook only stores the hook fields.
        unsafe {
            ffi::lua_sethook(
                self.state,
                Some(instruction_hook),
                ffi::LUA_MASKCOUNT,
                super::HOOK_PERIOD as c_int,
            );
        }
    }
}

/// The instruction hook. After `SCRIPT KILL`, once the memory bound refused an allocation, or
/// past a `FUNCTION LOAD`'s deadline, it raises the kill (memory, timeout) error, and from then on fires on every instruction of this
/// thread and of the main thread: a `pcall`, `xpcall` or `coroutine.resume` that catches the
/// error returns into code that stops at its next instruction, outside the protected call
/// (Redis keeps raising from its hook after a kill the same way). Otherwise it presses the
/// collector when a script holds more than half the memory bound, and moves the worker's other
/// tasks away from a long script.
unsafe extern "C-unwind" fn instruction_hook(state: *mut lua_State, ar: *mut ffi::lua_Debug) {
    // SAFETY (whole body): Lua calls the hook with a live `state` and its `ar`, with at least
    // LUA_MINSTACK free slots; the registry read pushes one value and pops it.
    let context = unsafe {
        let key = std::ptr::addr_of!(HOOK_CONTEXT_KEY).cast_mut().cast();
        ffi::lua_pushlightuserdata(state, key);
        ffi::lua_rawget(state, ffi::LUA_REGISTRYINDEX);
        let context = ffi::lua_touserdata(state, -1)
            .cast::<HookContext>()
            .cast_const();
        ffi::lua_settop(state, -2);
        context.as_ref()
    };
    let Some(context) = context else {
        return;
    };
    let memory = &context.memory;
    let exceeded = memory.exceeded.load(Ordering::Relaxed);
    let deadline = context.load_deadline.load(Ordering::Relaxed);
    let timed_out = deadline != 0 && load_clock_us() > deadline;
    if !context.kill.load(Ordering::Acquire) && !exceeded && !timed_out {
        if memory.limit > 0
            && memory.used() > memory.limit / 2
            && !memory.pressed.swap(true, Ordering::Relaxed)
        {
            // SAFETY: setting the pause only stores a number in the global state.
            unsafe { ffi::lua_gc(state, ffi::LUA_GCSETPAUSE, 100) };
        }
        // A panic must not unwind into Lua: the hand-off is best effort.
        let _ = catch_unwind(super::hand_off_if_inline);
        return;
    }
    // SAFETY: see above; `ar` is the hook's own record.
    let site = unsafe {
        if ffi::lua_getinfo(state, c"Sl".as_ptr(), ar) != 0 && !(*ar).source.is_null() {
            let source = std::ffi::CStr::from_ptr((*ar).source).to_string_lossy();
            Some((source.into_owned(), i64::from((*ar).currentline)))
        } else {
            None
        }
    };
    if let (Some(site), Ok(mut at)) = (site, context.shared.killed_at.lock()) {
        at.get_or_insert(site);
    }
    let message = if timed_out {
        super::LOAD_TIMEOUT_ERROR
    } else if exceeded {
        super::MEMORY_ERROR
    } else {
        context.shared.killed_error
    };
    // SAFETY: every Rust value of this function with a destructor is gone (the guard and the
    // site were dropped above); lua_error longjmps to the innermost protected call.
    unsafe {
        ffi::lua_sethook(state, Some(instruction_hook), ffi::LUA_MASKCOUNT, 1);
        ffi::lua_sethook(context.main, Some(instruction_hook), ffi::LUA_MASKCOUNT, 1);
        ffi::lua_pushlstring(state, message.as_ptr().cast(), message.len());
        ffi::lua_error(state);
    }
}

/// Runs `f` with at least `need` bytes of stack (see `script::on_script_stack`). On this
/// thread's own stack when that much is left (one comparison); else on a stack kept for the
/// thread (mapped once, with a guard page below it, and reused by every later run: a
/// [`crate::LocalClient`] called from a program's 8 MB main thread runs each script this way,
/// and a fresh mapping per script cost several times a short script); where stacks cannot be
/// switched by hand, through `stacker`.
pub(super) fn on_stack<R>(need: usize, f: impl FnOnce() -> R) -> R {
    if ON_SPARE.with(std::cell::Cell::get) || stacker::remaining_stack().is_some_and(|n| n >= need)
    {
        return f();
    }
    #[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let size = need + (1 << 20);
        let spare = SPARE
            .with(|s| s.borrow_mut().take())
            .filter(|s| s.len >= size)
            .or_else(|| SpareStack::map(size));
        if let Some(spare) = spare {
            ON_SPARE.with(|c| c.set(true));
            // SAFETY: `spare.base` is the page-aligned low end of `spare.len` readable and
            // writable bytes (a multiple of the page size) that nothing else uses while this
            // thread runs on them; the callback returns normally (a panic is caught inside it
            // and resumed below), and Lua's longjmps stay within it (every protected call of a
            // run is made inside `f`).
            let out = unsafe {
                psm::on_stack(spare.base, spare.len, move || {
                    catch_unwind(AssertUnwindSafe(f))
                })
            };
            ON_SPARE.with(|c| c.set(false));
            SPARE.with(|s| *s.borrow_mut() = Some(spare));
            return match out {
                Ok(r) => r,
                Err(payload) => std::panic::resume_unwind(payload),
            };
        }
    }
    stacker::maybe_grow(need, need + (1 << 20), f)
}

thread_local! {
    /// Set while this thread runs on its [`SpareStack`].
    static ON_SPARE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The thread's stack for scripts, once it needed one.
    #[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))]
    static SPARE: RefCell<Option<SpareStack>> = const { RefCell::new(None) };
}

/// A stack mapped for scripts: `len` bytes from `base`, above a guard page (no access), so an
/// overflow faults instead of writing over other memory.
#[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))]
struct SpareStack {
    /// The mapping (guard page included).
    mapping: *mut libc::c_void,
    /// The usable low end, one page above `mapping`.
    base: *mut u8,
    len: usize,
}

#[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))]
impl SpareStack {
    /// Maps `size` bytes (rounded up to pages) and a guard page; None if the system refuses.
    fn map(size: usize) -> Option<SpareStack> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
        if page == 0 {
            return None;
        }
        let len = size.checked_add(page - 1)? / page * page;
        let total = len.checked_add(page)?;
        // SAFETY: a fresh private anonymous mapping; its first page is then made inaccessible.
        unsafe {
            let mapping = libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANON,
                -1,
                0,
            );
            if mapping == libc::MAP_FAILED {
                return None;
            }
            if libc::mprotect(mapping, page, libc::PROT_NONE) != 0 {
                libc::munmap(mapping, total);
                return None;
            }
            Some(SpareStack {
                mapping,
                base: mapping.cast::<u8>().add(page),
                len,
            })
        }
    }
}

#[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))]
impl Drop for SpareStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, of `len` bytes and the page below them, which no
        // thread runs on any more (it is dropped with its thread, or replaced while unused).
        unsafe {
            let page = self
                .base
                .offset_from(self.mapping.cast::<u8>())
                .unsigned_abs();
            libc::munmap(self.mapping, self.len + page);
        }
    }
}
