"""A UCXX (UCX-Py API) client and server in one process: a listener, an endpoint to it over
loopback, 16 bytes sent and echoed back. Prints "UCX_TLS=<what the process had> echo=True|False"; a
UCX context that cannot be created raises (UCXXNoDeviceError: "No such device"). Run with the
UCXX venv's python (tests/wheels/ucxx-requirements.txt)."""
import asyncio, os, sys
import numpy as np
import ucxx

async def main():
    done = asyncio.get_running_loop().create_future()
    async def handler(ep):
        buf = np.empty(16, dtype=np.uint8)
        await ep.recv(buf)
        await ep.send(buf)
        await ep.close()
        done.set_result(True)
    lf = ucxx.create_listener(handler)
    ep = await ucxx.create_endpoint("127.0.0.1", lf.port)
    msg = np.arange(16, dtype=np.uint8)
    await ep.send(msg)
    back = np.empty(16, dtype=np.uint8)
    await ep.recv(back)
    await done
    print("UCX_TLS=%s echo=%s" % (os.environ.get("UCX_TLS", "<unset>"), bool((msg == back).all())), flush=True)

asyncio.run(main())
