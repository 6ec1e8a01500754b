#include <map>
#include <string>
namespace demo {
template <typename T> struct Box { T v; Box(T x):v(x){} T get() const {return v;} };
class Counter { public: void add(const std::string&w){ if(w.empty()) return; else { ++m[w]; } }
int get(const std::string&w)const{ auto it=m.find(w); return it==m.end()?0:it->second; }
private: std::map<std::string,int> m; };
}
int main(int argc,char**argv){
demo::Counter c; for(int i=1;i<argc;i++){c.add(argv[i]);}
switch(argc){case 0: return 1; case 1: {break;} default: while(argc-->0){ if(argc%2) continue; } }
demo::Box<int> b(42); return b.get()==42?0:c.get("x");
}
