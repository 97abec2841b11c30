# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""IPC between processes, devices per thread, and choosing the backend."""

import pickle

import numpy as np
import pytest

import gpuhal

from conftest import assert_same


def test_ipc_handle_opened_in_another_process(python):
    if not gpuhal.current_context().supports("ipc"):
        pytest.skip("no IPC on this backend")
    d = gpuhal.to_device(np.arange(16, dtype=np.int64).reshape(4, 4))
    view = d[1:3, ::2]
    handle = view.get_ipc_handle()
    assert handle.shape == view.shape and handle.dtype == np.int64
    blob = pickle.dumps(handle).hex()
    rc, out, err = python(f"""
        import pickle
        import numpy as np
        import gpuhal
        handle = pickle.loads(bytes.fromhex("{blob}"))
        with handle as shared:
            print(shared.copy_to_host().tolist())
            shared[:] = -1          # the exporter sees this
    """)
    assert rc == 0, err
    assert out.strip() == str([[4, 6], [8, 10]])
    expected = np.arange(16, dtype=np.int64).reshape(4, 4)
    expected[1:3, ::2] = -1
    assert_same(d.copy_to_host(), expected)
    # The exporting process cannot open its own handle (as in CUDA).
    with pytest.raises(gpuhal.Error):
        handle.open()


def test_ipc_handle_text_is_checked():
    with pytest.raises(gpuhal.InvalidIpcHandleError):
        gpuhal.IpcArrayHandle.deserialize("not a handle", np.float32)


def test_devices():
    devices = gpuhal.list_devices()
    assert len(devices) == len(gpuhal.gpus) >= 1
    dev = gpuhal.select_device(0)
    assert dev == gpuhal.get_current_device() == devices[0] and dev.id == 0
    assert isinstance(dev.name, str) and dev.name
    props = dev.properties
    assert props["total_memory"] > 0 and props["max_threads_per_block"] > 0
    assert dev.compute_capability == props["compute_capability"]
    # The host backend runs kernels in this process: a kernel's fault is the process's.
    assert props["recovers_from_faults"] is gpuhal.current_context().supports("fault_recovery")
    if props["driver_version"].startswith("gpuhal host backend"):
        assert props["recovers_from_faults"] is False
        assert props["exclusive_contexts"] is True  # only gpuhal submits: idle blocks on
        assert props["module_loads_wait"] is False  # a module is a dlopened shared object
        assert props["synchronize_waits_for_all_work"] is True  # its contexts are its own
    elif props["driver_version"].startswith("CUDA"):
        assert props["exclusive_contexts"] is False  # the primary context is shared
        assert props["module_loads_wait"] is True  # lazy loading may synchronise the context
        assert props["synchronize_waits_for_all_work"] is True  # cuCtxSynchronize: every stream
    assert gpuhal.gpus.current == dev
    assert gpuhal.gpus[0].name == dev.name
    with gpuhal.gpus[0] as inside:
        assert inside == dev
    with pytest.raises(gpuhal.InvalidValueError):
        gpuhal.select_device(len(devices))
    with pytest.raises(IndexError):
        gpuhal.gpus[len(devices)]
    assert gpuhal.is_available()
    assert gpuhal.current_context().device == dev


def test_backend_is_chosen_before_first_use(python):
    rc, out, err = python("""
        import gpuhal
        gpuhal.set_backend("host")
        print(gpuhal.backend())
        try:
            gpuhal.set_backend("cuda")
        except gpuhal.InvalidValueError as e:
            print("refused:", e.message)
        import os
        print(os.environ["GPUHAL_BACKEND"])  # left as it was
    """, env={"GPUHAL_BACKEND": ""})
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "host" and lines[1].startswith("refused: set_backend('cuda')") and lines[2] == "host"
    rc, out, err = python("""
        import gpuhal
        try:
            gpuhal.backend()
        except gpuhal.PluginNotFoundError as e:
            print("not found:", e.status)
        print(gpuhal.is_available())
    """, env={"GPUHAL_BACKEND": "no-such-backend"})
    assert rc == 0, err
    assert out.split() == ["not", "found:", "ERROR_PLUGIN_NOT_FOUND", "False"]


def test_plugins_are_found_inside_the_package(python):
    # No GPUHAL_PLUGIN_PATH: the loader finds the plugins beside libgpuhal,
    # in the installed package.
    rc, out, err = python("""
        import os, gpuhal
        from gpuhal import _gpuhal
        print(os.path.dirname(_gpuhal.plugin_path()) == os.path.dirname(gpuhal.__file__))
    """, env={"GPUHAL_PLUGIN_PATH": "", "GPUHAL_BACKEND": "host"})
    assert rc == 0, err
    assert out.strip() == "True"


def test_the_thread_context_lives_from_first_use_until_close(python):
    rc, out, err = python("""
        import gpuhal
        gpuhal.device_array(16)  # dropped at once: queued on the thread's context
        print(len(gpuhal.current_context().deallocations))  # the same context: 1
        gpuhal.close()  # lets it go (its queue runs)
        print(len(gpuhal.current_context().deallocations))  # a new context: 0
    """)
    assert rc == 0, err
    assert out.split() == ["1", "0"]


def test_device_uuid_in_numbas_form():
    import re
    d = gpuhal.get_current_device()
    u = d.uuid
    props = d.properties["uuid"]
    if props is None:  # a backend without UUIDs says so by None
        assert u is None
        return
    assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", u), u
    assert u == "GPU-" + props
    assert gpuhal.get_current_device().uuid == u  # stable
