package jdk.internal.net.http;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicLong;

/**
 * HttpClient exchanges, recorded and replayed whole at the API (the agent defines this class
 * into java.net.http and points HttpClientFacade's calls of {@code HttpClientImpl.send} and
 * {@code sendAsync} here).
 *
 * Why at the API: the client's internals hand data between its selector thread and its pool
 * workers through lock-free queues and counters, so the socket calls they make come in
 * another order from run to run; recorded call by call, replays diverged (0 of 10). Here the
 * exchange is one event of the calling thread: record runs the real client with every hook
 * of the calling thread live and unrecorded for the call (its own threads are JDK service
 * threads, never recorded), then records the request line (checked in replay) and the
 * response (status, version, URI, headers, the redirects before it, or the exception); the
 * body bytes, as the client handed them to the program's body subscriber, are side records
 * of their own (a streamed body arrives after send returned). Replay never runs the client:
 * it answers from the log and feeds the recorded body to the program's own BodyHandler.
 *
 * One class, several roles (the agent's class loading takes one class file): a response
 * and its ResponseInfo in replay, a Flow.Subscription feeding a subscriber in replay, and a
 * tee BodySubscriber in record.
 */
public final class ReplayHttp implements HttpResponse<Object>, HttpResponse.ResponseInfo,
        Flow.Subscription, HttpResponse.BodySubscriber<Object> {

    /** Exchanges in this process, in the order of their calls (the side records' key). */
    private static final AtomicLong EXCHANGES = new AtomicLong();
    /** sendAsync calls: each runs on a thread of its own, named by this count. */
    private static final AtomicLong ASYNC = new AtomicLong();

    // ---- as a response (replay) ----
    private int status;
    private HttpClient.Version version;
    private URI uri;
    private HttpHeaders headers;
    private HttpRequest request;
    private Object body;
    private HttpResponse<Object> previous;

    // ---- as the program's body subscriber's feed (replay) or a tee (record) ----
    private HttpResponse.BodySubscriber<Object> target;
    private long exchange;
    private Object[] chunks;
    private int next;
    private long demand;
    private boolean delivering;
    private boolean done;

    private ReplayHttp() {}

    // ---- the calls HttpClientFacade makes ----

    public static HttpResponse<Object> send(HttpClientImpl c, HttpRequest req,
            HttpResponse.BodyHandler<Object> h) throws IOException, InterruptedException {
        int m = ReplayHooks.httpMode();
        if (m == 0 || req == null || h == null || ReplayHooks.ownServer(req.uri())) {
            return c.send(req, h);
        }
        String input = req.method() + " " + req.uri();
        if (m == 1) {
            return record(c, req, h, input);
        }
        byte[] p = ReplayHooks.httpEvent(input, null);
        if (p == null) {
            return c.send(req, h); // replay went live
        }
        return replayed(req, h, p);
    }

    public static CompletableFuture<HttpResponse<Object>> sendAsync(HttpClientImpl c,
            HttpRequest req, HttpResponse.BodyHandler<Object> h) {
        if (ReplayHooks.httpMode() == 0 || req == null || h == null
                || ReplayHooks.ownServer(req.uri())) {
            return c.sendAsync(req, h);
        }
        return async(c, req, h);
    }

    public static CompletableFuture<HttpResponse<Object>> sendAsync(HttpClientImpl c,
            HttpRequest req, HttpResponse.BodyHandler<Object> h,
            HttpResponse.PushPromiseHandler<Object> push) {
        // Pushed responses (HTTP/2 server push) come from the client's threads: not an exchange
        // this class can answer alone.
        if (ReplayHooks.httpMode() == 0 || push != null || req == null || h == null
                || ReplayHooks.ownServer(req.uri())) {
            return c.sendAsync(req, h, push);
        }
        return async(c, req, h);
    }

    /**
     * sendAsync as a send on a thread of its own, in record and replay alike: the exchange is
     * an event of that thread, which exists in both runs (the client's workers do not run in
     * replay), and the program's dependent actions run there as they would on a worker.
     */
    private static CompletableFuture<HttpResponse<Object>> async(HttpClientImpl c, HttpRequest req,
            HttpResponse.BodyHandler<Object> h) {
        CompletableFuture<HttpResponse<Object>> cf = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                cf.complete(send(c, req, h));
            } catch (Throwable e) {
                cf.completeExceptionally(e);
            }
        }, "HttpClient-async-" + ASYNC.incrementAndGet());
        t.setDaemon(true);
        t.start();
        return cf;
    }

    // ---- record ----

    private static HttpResponse<Object> record(HttpClientImpl c, HttpRequest req,
            HttpResponse.BodyHandler<Object> h, String input) throws IOException, InterruptedException {
        long x = EXCHANGES.incrementAndGet();
        HttpResponse.BodyHandler<Object> tee = info -> {
            ReplayHttp t = new ReplayHttp();
            t.target = h.apply(info);
            t.exchange = x;
            return t;
        };
        HttpResponse<Object> r = null;
        Throwable err = null;
        byte[] p = null;
        Object saved = ReplayHooks.liveBegin();
        try {
            try {
                r = c.send(req, tee);
            } catch (Throwable e) {
                err = e;
            }
            // Serializing the exception runs JDK code: live, like its reading in replay.
            p = encode(x, r, err);
        } catch (IOException e) {
            p = null;
        } finally {
            ReplayHooks.liveEnd(saved);
        }
        if (p != null) {
            ReplayHooks.httpEvent(input, p);
        }
        if (err != null) {
            throw ReplayHttp.<RuntimeException>sneaky(err);
        }
        return r;
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E sneaky(Throwable e) throws E {
        throw (E) e;
    }

    private static byte[] encode(long x, HttpResponse<?> r, Throwable err) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeLong(x);
        out.writeBoolean(err != null);
        if (err != null) {
            // Serialized whole when it can be: the program may print its stack trace and
            // causes (an uncaught ConnectException), and replay must print the same.
            byte[] whole = null;
            try {
                ByteArrayOutputStream o = new ByteArrayOutputStream();
                try (java.io.ObjectOutputStream oo = new java.io.ObjectOutputStream(o)) {
                    oo.writeObject(err);
                }
                whole = o.toByteArray();
            } catch (IOException | RuntimeException e) {
                whole = null;
            }
            out.writeInt(whole == null ? -1 : whole.length);
            if (whole != null) {
                out.write(whole);
            }
            out.writeUTF(err.getClass().getName());
            text(out, err.getMessage());
            out.flush();
            return bytes.toByteArray();
        }
        List<HttpResponse<?>> chain = new ArrayList<>();
        for (HttpResponse<?> p = r; p != null; p = p.previousResponse().orElse(null)) {
            chain.add(p);
        }
        out.writeInt(chain.size());
        for (HttpResponse<?> p : chain) {
            out.writeInt(p.statusCode());
            out.writeUTF(p.version().name());
            text(out, p.uri() == null ? null : p.uri().toString());
            HttpRequest q = p.request();
            text(out, q == null ? null : q.method());
            text(out, q == null || q.uri() == null ? null : q.uri().toString());
            Map<String, List<String>> map = p.headers().map();
            out.writeInt(map.size());
            for (Map.Entry<String, List<String>> e : map.entrySet()) {
                text(out, e.getKey());
                out.writeInt(e.getValue().size());
                for (String v : e.getValue()) {
                    text(out, v);
                }
            }
        }
        out.flush();
        return bytes.toByteArray();
    }

    /** A string of any length, or null. */
    private static void text(DataOutputStream out, String s) throws IOException {
        if (s == null) {
            out.writeInt(-1);
            return;
        }
        byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }

    private static String text(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0) {
            return null;
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }

    // ---- as a tee (record): the body as the program's subscriber gets it ----

    @Override
    public void onSubscribe(Flow.Subscription s) {
        target.onSubscribe(s);
    }

    @Override
    public void onNext(List<ByteBuffer> item) {
        int n = 0;
        for (ByteBuffer b : item) {
            n += b.remaining();
        }
        byte[] all = new byte[n];
        int at = 0;
        for (ByteBuffer b : item) {
            int k = b.remaining();
            b.duplicate().get(all, at, k);
            at += k;
        }
        ReplayHooks.httpSide(exchange, all, null);
        target.onNext(item);
    }

    @Override
    public void onError(Throwable t) {
        ReplayHooks.httpSide(exchange, null, String.valueOf(t));
        target.onError(t);
    }

    @Override
    public void onComplete() {
        ReplayHooks.httpSide(exchange, null, "");
        target.onComplete();
    }

    @Override
    public java.util.concurrent.CompletionStage<Object> getBody() {
        return target.getBody();
    }

    // ---- replay ----

    private static HttpResponse<Object> replayed(HttpRequest req, HttpResponse.BodyHandler<Object> h,
            byte[] p) throws IOException, InterruptedException {
        DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(p));
        long x = in.readLong();
        if (in.readBoolean()) {
            int n = in.readInt();
            byte[] whole = n < 0 ? null : in.readNBytes(n);
            String cls = in.readUTF();
            String message = text(in);
            Throwable e = null;
            if (whole != null) {
                Object saved = ReplayHooks.liveBegin();
                try (java.io.ObjectInputStream oi = new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(whole))) {
                    Object o = oi.readObject();
                    e = o instanceof Throwable ? (Throwable) o : null;
                } catch (IOException | ClassNotFoundException | RuntimeException ex) {
                    e = null;
                } finally {
                    ReplayHooks.liveEnd(saved);
                }
            }
            throw ReplayHttp.<IOException>sneaky(e != null ? e : exception(cls, message));
        }
        int n = in.readInt();
        ReplayHttp[] chain = new ReplayHttp[n];
        for (int i = 0; i < n; i++) {
            ReplayHttp r = new ReplayHttp();
            r.status = in.readInt();
            r.version = HttpClient.Version.valueOf(in.readUTF());
            String u = text(in);
            r.uri = u == null ? null : URI.create(u);
            String method = text(in);
            String qu = text(in);
            r.request = method == null || qu == null || (method.equals(req.method()) && qu.equals(String.valueOf(req.uri())))
                ? req
                : HttpRequest.newBuilder(URI.create(qu)).method(method, HttpRequest.BodyPublishers.noBody()).build();
            int hn = in.readInt();
            Map<String, List<String>> map = new LinkedHashMap<>();
            for (int k = 0; k < hn; k++) {
                String name = text(in);
                int vn = in.readInt();
                List<String> vs = new ArrayList<>(vn);
                for (int j = 0; j < vn; j++) {
                    vs.add(text(in));
                }
                map.put(name, vs);
            }
            r.headers = HttpHeaders.of(map, (a, b) -> true);
            chain[i] = r;
        }
        for (int i = 0; i + 1 < n; i++) {
            chain[i].previous = chain[i + 1];
        }
        ReplayHttp r = chain[0];
        // The program's subscriber runs as the client's threads ran it in record: live.
        Object saved = ReplayHooks.liveBegin();
        try {
            HttpResponse.BodySubscriber<Object> s = h.apply(r);
            ReplayHttp feed = new ReplayHttp();
            feed.target = s;
            Object[] got = ReplayHooks.httpBody(x);
            feed.chunks = got == null ? new Object[0] : got;
            s.onSubscribe(feed);
            r.body = s.getBody().toCompletableFuture().get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof IOException) {
                throw (IOException) cause;
            }
            throw new IOException(cause);
        } finally {
            ReplayHooks.liveEnd(saved);
        }
        return r;
    }

    /** The recorded exception, as the same class when it has a (String) constructor. */
    private static Throwable exception(String cls, String message) {
        try {
            Class<?> c = Class.forName(cls, false, ReplayHttp.class.getClassLoader());
            if (Throwable.class.isAssignableFrom(c)) {
                return (Throwable) c.getConstructor(String.class).newInstance(message);
            }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            // Below: an IOException naming it.
        }
        return new IOException(cls + (message == null ? "" : ": " + message));
    }

    // ---- as a subscription (replay): the recorded body, as the subscriber asks for it ----

    @Override
    public synchronized void request(long n) {
        if (done) {
            return;
        }
        if (n <= 0) {
            done = true;
            target.onError(new IllegalArgumentException("non-positive subscription request: " + n));
            return;
        }
        demand = demand + n < 0 ? Long.MAX_VALUE : demand + n;
        if (delivering) {
            return; // called from onNext: the loop below goes on
        }
        delivering = true;
        try {
            while (!done) {
                Object c = next < chunks.length ? chunks[next] : null;
                if (c instanceof byte[]) {
                    if (demand == 0) {
                        return;
                    }
                    demand--;
                    next++;
                    target.onNext(List.of(ByteBuffer.wrap((byte[]) c)));
                } else {
                    done = true;
                    if (c instanceof String && ((String) c).isEmpty()) {
                        target.onComplete();
                    } else if (c instanceof String) {
                        target.onError(new IOException((String) c));
                    } else {
                        target.onError(new IOException(
                            "replay: the recording ends before this response's body did (the recorder was killed or cut)"));
                    }
                }
            }
        } finally {
            delivering = false;
        }
    }

    @Override
    public synchronized void cancel() {
        done = true;
    }

    // ---- as a response (replay) ----

    @Override
    public int statusCode() {
        return status;
    }

    @Override
    public HttpRequest request() {
        return request;
    }

    @Override
    public Optional<HttpResponse<Object>> previousResponse() {
        return Optional.ofNullable(previous);
    }

    @Override
    public HttpHeaders headers() {
        return headers;
    }

    @Override
    public Object body() {
        return body;
    }

    @Override
    public Optional<javax.net.ssl.SSLSession> sslSession() {
        return Optional.empty();
    }

    @Override
    public URI uri() {
        return uri;
    }

    @Override
    public HttpClient.Version version() {
        return version;
    }

    /** As HttpResponseImpl prints itself. */
    @Override
    public String toString() {
        if (request == null) {
            return super.toString();
        }
        URI u = request.uri();
        return "(" + request.method() + " " + (u == null ? "" : u.toString()) + ") " + status;
    }
}
