from api.routers import ApiRouter
from quotes.api.views import QuoteViewSet

router = ApiRouter()
router.register("quotes", QuoteViewSet, basename="quotes")

urlpatterns = router.urls
